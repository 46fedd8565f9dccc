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
	aead, err := newAEAD(in)
	if err != nil {
		return nil, err
	}
	s := &Sealer{in: in, aead: aead, seq: in.Seq}
	if len(in.Salt) > 0 {
		s.explicit = binary.BigEndian.Uint64(in.IV)
	}
	return s, nil
}

// newAEAD checks in as setsockopt would and makes its cipher.
func newAEAD(in ktls.Info) (cipher.AEAD, error) {
	if _, err := in.AppendBinary(nil); err != nil {
		return nil, err
	}
	if in.Cipher == ktls.ChaCha20Poly1305 {
		return chacha20poly1305.New(in.Key)
	}
	b, err := aes.NewCipher(in.Key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// nonce is the per-record nonce: salt || explicit (TLS 1.2 AES-GCM), or
// (salt || iv) XOR the padded sequence number.
func nonce(in ktls.Info, seq, explicit uint64) [12]byte {
	var n [12]byte
	if in.Version == ktls.VersionTLS12 && len(in.Salt) > 0 {
		copy(n[:4], in.Salt)
		binary.BigEndian.PutUint64(n[4:], explicit)
		return n
	}
	copy(n[:], in.Salt)
	copy(n[len(in.Salt):], in.IV)
	var sq [8]byte
	binary.BigEndian.PutUint64(sq[:], seq)
	for i := range sq {
		n[4+i] ^= sq[i]
	}
	return n
}

// aad12 is RFC 5246 §6.2.3.3's additional_data: seq_num + type + version + length.
func aad12(seq uint64, typ uint8, n int) [13]byte {
	var aad [13]byte
	binary.BigEndian.PutUint64(aad[:8], seq)
	aad[8], aad[9], aad[10] = typ, 3, 3
	binary.BigEndian.PutUint16(aad[11:], uint16(n))
	return aad
}

// ErrRecordTooLarge: more plaintext than one record carries.
var ErrRecordTooLarge = errors.New("ktlstest: plaintext larger than one record")

// Seal appends one record of type typ carrying plaintext to dst.
func (s *Sealer) Seal(dst []byte, typ uint8, plaintext []byte) ([]byte, error) {
	if len(plaintext) > ktls.MaxPlaintext {
		return dst, ErrRecordTooLarge
	}
	nonce := nonce(s.in, s.seq, s.explicit)
	tls12GCM := s.in.Version == ktls.VersionTLS12 && len(s.in.Salt) > 0
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
		aad := aad12(s.seq, typ, len(plaintext))
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

// Opener opens records in user space exactly as the kernel's receive
// side does with the same Info: it stands in for TLS_RX in tests.
type Opener struct {
	in   ktls.Info
	aead cipher.AEAD
	seq  uint64
}

// NewOpener returns an Opener whose first record has sequence number in.Seq.
func NewOpener(in ktls.Info) (*Opener, error) {
	aead, err := newAEAD(in)
	if err != nil {
		return nil, err
	}
	return &Opener{in: in, aead: aead, seq: in.Seq}, nil
}

// ErrBadRecord: a record that does not open (the kernel's EBADMSG: wrong
// key, IV or sequence number, or a forged record).
var ErrBadRecord = errors.New("ktlstest: bad record MAC")

// RecordLen returns the length of the whole record at the head of b (its
// header and body), or 0 while its header is incomplete.
func RecordLen(b []byte) int {
	if len(b) < 5 {
		return 0
	}
	return 5 + int(binary.BigEndian.Uint16(b[3:5]))
}

// Open opens one whole record (header and body) and returns its type and
// plaintext (appended to dst).
func (o *Opener) Open(dst, record []byte) (uint8, []byte, error) {
	if len(record) < 5 || RecordLen(record) != len(record) {
		return 0, dst, errors.New("ktlstest: not one whole record")
	}
	hdr, body := record[:5], record[5:]
	tag := o.aead.Overhead()
	var typ uint8
	var err error
	if o.in.Version == ktls.VersionTLS13 {
		n := nonce(o.in, o.seq, 0)
		start := len(dst)
		if dst, err = o.aead.Open(dst, n[:], body, hdr); err != nil {
			return 0, dst[:start], ErrBadRecord
		}
		// RFC 8446 §5.4: the type is the last non-zero byte.
		i := len(dst) - 1
		for i >= start && dst[i] == 0 {
			i--
		}
		if i < start {
			return 0, dst[:start], errors.New("ktlstest: TLS 1.3 record without a type")
		}
		typ, dst = dst[i], dst[:i]
	} else {
		typ = hdr[0]
		explicit := uint64(0)
		if len(o.in.Salt) > 0 {
			if len(body) < 8 {
				return 0, dst, ErrBadRecord
			}
			explicit, body = binary.BigEndian.Uint64(body[:8]), body[8:]
		}
		if len(body) < tag {
			return 0, dst, ErrBadRecord
		}
		n := nonce(o.in, o.seq, explicit)
		aad := aad12(o.seq, typ, len(body)-tag)
		start := len(dst)
		if dst, err = o.aead.Open(dst, n[:], body, aad[:]); err != nil {
			return 0, dst[:start], ErrBadRecord
		}
	}
	o.seq++
	return typ, dst, nil
}
