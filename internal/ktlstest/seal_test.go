package ktlstest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/tls"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"segorigin/origin/ktls"
)

// TestSealerTLS13: a record sealed by Sealer opens with the nonce and AAD
// of RFC 8446 §5.2-5.3, built here independently of Sealer.
func TestSealerTLS13(t *testing.T) {
	for _, tt := range []struct {
		name  string
		suite uint16
		aead  func(key []byte) (cipher.AEAD, error)
	}{
		{"AES-128-GCM", tls.TLS_AES_128_GCM_SHA256, func(key []byte) (cipher.AEAD, error) {
			b, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			return cipher.NewGCM(b)
		}},
		{"ChaCha20-Poly1305", tls.TLS_CHACHA20_POLY1305_SHA256, chacha20poly1305.New},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ktls.TLS13(tt.suite, bytes.Repeat([]byte{9}, 32), 5)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSealer(in)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := s.Seal(nil, ktls.RecordApplicationData, []byte("hello"))
			if err != nil {
				t.Fatal(err)
			}
			g, err := tt.aead(in.Key)
			if err != nil {
				t.Fatal(err)
			}
			// RFC 8446 §5.3: the padded sequence number XORed into the
			// last 8 bytes of the 12-byte IV (salt || iv here).
			nonce := append(append([]byte{}, in.Salt...), in.IV...)
			for i := range 8 {
				nonce[4+i] ^= byte(uint64(5) >> (56 - 8*i))
			}
			pt, err := g.Open(nil, nonce, rec[5:], rec[:5])
			if err != nil || string(pt) != "hello\x17" {
				t.Fatalf("open = %q, %v; want \"hello\\x17\"", pt, err)
			}
			if s.Seq() != 6 {
				t.Errorf("Seq after one record = %d, want 6", s.Seq())
			}
			if _, err := s.Seal(nil, ktls.RecordApplicationData, make([]byte, ktls.MaxPlaintext+1)); err == nil {
				t.Errorf("Seal of %d bytes: no error", ktls.MaxPlaintext+1)
			}
		})
	}
}
