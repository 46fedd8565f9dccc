package ktls

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
)

// Sealer seals records in user space exactly as the kernel does with the
// same Info: the same nonce, additional data and sequence number, advanced
// per record. It stands in for the kernel in tests; nothing on the serving
// path uses it.
type Sealer struct {
	in       Info
	aead     cipher.AEAD
	seq      uint64
	explicit uint64 // TLS 1.2 AES-GCM: the next explicit nonce
}

// NewSealer returns a Sealer whose first record has sequence number in.Seq.
func NewSealer(in Info) (*Sealer, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	var aead cipher.AEAD
	var err error
	switch in.Cipher {
	case ChaCha20Poly1305:
		aead, err = newChaChaPoly(in.Key)
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
var ErrRecordTooLarge = errors.New("ktls: plaintext larger than one record")

// Seal appends one record of type typ carrying plaintext to dst.
func (s *Sealer) Seal(dst []byte, typ uint8, plaintext []byte) ([]byte, error) {
	if len(plaintext) > MaxPlaintext {
		return dst, ErrRecordTooLarge
	}
	var nonce [12]byte
	tls12GCM := s.in.Version == VersionTLS12 && len(s.in.Salt) > 0
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
	if s.in.Version == VersionTLS13 {
		// RFC 8446 §5.2: the inner plaintext ends with the real type; the
		// outer record says application_data, and the header is the AAD.
		n := len(plaintext) + 1 + tag
		hdr := []byte{RecordApplicationData, 3, 3, byte(n >> 8), byte(n)}
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
