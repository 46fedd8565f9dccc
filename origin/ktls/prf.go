package ktls

import (
	"crypto/hkdf"
	"crypto/hmac"
	"hash"
)

// expandLabel is HKDF-Expand-Label(secret, label, "", length) of RFC 8446
// §7.1: HKDF-Expand with the HkdfLabel struct
//
//	struct { uint16 length; opaque label<7..255> = "tls13 " + label;
//	         opaque context<0..255> = ""; }
func expandLabel(h func() hash.Hash, secret []byte, label string, length int) ([]byte, error) {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = append(info, byte(length>>8), byte(length), byte(len(full)))
	info = append(info, full...)
	info = append(info, 0) // empty context
	return hkdf.Expand(h, secret, string(info), length)
}

// prf12 is the TLS 1.2 PRF (RFC 5246 §5): P_hash(secret, label + seed).
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, n int) []byte {
	ls := make([]byte, 0, len(label)+len(seed))
	ls = append(append(ls, label...), seed...)
	out := make([]byte, 0, n+h().Size())
	mac := hmac.New(h, secret)
	a := ls // A(0) = seed
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(nil) // A(i) = HMAC(secret, A(i-1))
		mac.Reset()
		mac.Write(a)
		mac.Write(ls)
		out = mac.Sum(out) // HMAC(secret, A(i) + seed)
	}
	return out[:n]
}
