package ktlstest

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"

	"golang.org/x/crypto/chacha20poly1305"

	"segorigin/origin/ktls"
)

// Sealer seals records in user space exactly as the kernel does with the
// same Info: the same nonce, additional data and sequence number, advanced
// per record. It stands in for the kernel in tests; nothing on the serving
// path uses it.
type Sealer struct {
	in       ktls.Info
	aead     cipher.AEAD
	seq      uint64
	explicit uint64 // TLS 1.2 AES-GCM: the next explicit nonce
}

// NewSealer returns a Sealer whose first record has sequence number in.Seq.
// Info is validated as setsockopt's crypto_info would be (AppendBinary).
func NewSealer(in ktls.Info) (*Sealer, error) {
	if _, err := in.AppendBinary(nil); err != nil {
		return nil, err
	}
	var aead cipher.AEAD
	var err error
	switch in.Cipher {
	case ktls.ChaCha20Poly1305:
		aead, err = chacha20poly1305.New(in.Key)
	default:
		var b cipher.Block
		if b, err = aes.NewCipher(in.Key); err == nil {
			aead, err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		return nil, err
	}
	s := &Sealer{in: in, aead: aead, seq: in.Seq}
	if len(in.Salt) > 0 {
		s.explicit = binary.BigEndian.Uint64(in.IV)
	}
	return s, nil
}

// ErrRecordTooLarge: more plaintext than one record carries.
var ErrRecordTooLarge = errors.New("ktlstest: plaintext larger than one record")

// Seal appends one record of type typ carrying plaintext to dst.
func (s *Sealer) Seal(dst []byte, typ uint8, plaintext []byte) ([]byte, error) {
	if len(plaintext) > ktls.MaxPlaintext {
		return dst, ErrRecordTooLarge
	}
	var nonce [12]byte
	tls12GCM := s.in.Version == ktls.VersionTLS12 && len(s.in.Salt) > 0
	switch {
	case tls12GCM:
		copy(nonce[:4], s.in.Salt)
		binary.BigEndian.PutUint64(nonce[4:], s.explicit)
	default:
		copy(nonce[:], s.in.Salt)
		copy(nonce[len(s.in.Salt):], s.in.IV)
		var seq [8]byte
		binary.BigEndian.PutUint64(seq[:], s.seq)
		for i := range seq {
			nonce[4+i] ^= seq[i]
		}
	}
	tag := s.aead.Overhead()
	if s.in.Version == ktls.VersionTLS13 {
		// RFC 8446 §5.2: the inner plaintext ends with the real type; the
		// outer record says application_data, and the header is the AAD.
		n := len(plaintext) + 1 + tag
		hdr := []byte{ktls.RecordApplicationData, 3, 3, byte(n >> 8), byte(n)}
		inner := append(append(make([]byte, 0, len(plaintext)+1), plaintext...), typ)
		dst = append(dst, hdr...)
		dst = s.aead.Seal(dst, nonce[:], inner, hdr)
	} else {
		// RFC 5246 §6.2.3.3: additional_data = seq_num + type + version + length.
		var aad [13]byte
		binary.BigEndian.PutUint64(aad[:8], s.seq)
		aad[8], aad[9], aad[10] = typ, 3, 3
		binary.BigEndian.PutUint16(aad[11:], uint16(len(plaintext)))
		n := len(plaintext) + tag
		if tls12GCM {
			n += 8
		}
		dst = append(dst, typ, 3, 3, byte(n>>8), byte(n))
		if tls12GCM {
			dst = append(dst, nonce[4:]...)
		}
		dst = s.aead.Seal(dst, nonce[:], plaintext, aad[:])
	}
	s.seq++
	s.explicit++
	return dst, nil
}

// Seq returns the sequence number of the next record.
func (s *Sealer) Seq() uint64 { return s.seq }
