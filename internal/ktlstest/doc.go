// Package ktlstest stands in for the kernel's kTLS transmit side, for
// tests of HTTPS on a kernel without kTLS (and of the hand-over itself on
// any kernel). It owns two things: Sealer, which seals TLS records in user
// space exactly as the kernel would with a given ktls.Info (same nonce,
// additional data and per-record sequence number), and KTLSEmulator,
// which plugs a Sealer into an origin/conn TLS listener where
// setsockopt(SOL_TLS, TLS_TX) would go.
//
// The ciphers are the standard library's AES-GCM (crypto/aes,
// crypto/cipher) and golang.org/x/crypto/chacha20poly1305: the standard
// library keeps its ChaCha20-Poly1305 internal, and a well-kept library
// is better than a hand-written one for code whose only job is to be
// right. What this package writes by hand is only the record framing of
// RFC 5246 §6.2.3.3 and RFC 8446 §5.2, the part under test.
//
// It is imported only by tests and test tools; nothing on the serving
// path uses it, and it never touches a socket option. A stock TLS client
// that decrypts its records proves that the same Info would make the
// kernel's records decryptable; an off-by-one sequence number fails with
// bad record MAC.
package ktlstest
