// Package ktls holds the pure parts of handing a TLS connection's records
// to the Linux kernel (kTLS) that the serving path uses: deriving the key
// material of both directions from what crypto/tls exposes (KeyLog,
// HandshakeScanner, TLS12, TLS13, NextTrafficSecret) and laying it out as
// setsockopt(SOL_TLS, TLS_TX or TLS_RX) wants it (Info); the record
// framing that lets the handshake read one record at a time (Framer); and
// what a control record the kernel's receive side hands back asks of the
// server (ParseControl). It never touches a socket and never seals or
// opens a record: the kernel does that, and in tests internal/ktlstest
// stands in for it.
//
// # What crypto/tls exposes, and what the kernel needs
//
// crypto/tls does not export traffic keys (golang/go#44506). It does write
// the secrets to Config.KeyLogWriter in the NSS key log format; KeyLog
// collects them for one connection:
//
//   - TLS 1.3: SERVER_TRAFFIC_SECRET_0. The key and IV follow from it by
//     HKDF-Expand-Label (RFC 8446 §7.3); see TLS13.
//   - TLS 1.2: CLIENT_RANDOM, which carries the master secret. The key block
//     is PRF(master_secret, "key expansion", server_random + client_random)
//     (RFC 5246 §6.3), which also needs the server random: crypto/tls never
//     exposes it, so HandshakeScanner reads it from the ServerHello as it
//     goes out on the wire; see TLS12.
//
// The kernel also needs the sequence number of the first record it will
// seal. In TLS 1.2 the server's Finished is the first record under the new
// keys (sequence 0), so application data starts at 1 unless more was
// written; HandshakeScanner counts the records the server wrote after its
// ChangeCipherSpec, which is exact. In TLS 1.3 the Finished is sealed with
// the handshake keys, and the application keys start at 0, but a session
// ticket (NewSessionTicket) is sealed with them: the caller counts them
// (origin/conn does, through Config.WrapSession).
//
// The receive direction opens the client's records: TLS 1.3 with
// CLIENT_TRAFFIC_SECRET_0 from sequence 0 (the client's Finished used its
// handshake keys), TLS 1.2 with the key block's client_write key and IV
// from sequence 1 (its Finished was record 0). A TLS 1.3 KeyUpdate moves a
// direction to its next secret (NextTrafficSecret), at sequence 0.
//
// # Layout
//
// Info.AppendBinary writes struct tls12_crypto_info_aes_gcm_128, _aes_gcm_256
// or _chacha20_poly1305 of <linux/tls.h>: two host-order u16 (version,
// cipher_type), then iv, key, salt and rec_seq as bytes, no padding. The
// sequence number is big-endian, as on the wire. golang.org/x/sys/unix has
// SOL_TLS and TCP_ULP but not these structs, so they are built by hand.
//
// # Nonces, as the kernel builds them
//
//   - AES-GCM, TLS 1.2 (RFC 5288): nonce = salt (4, the key block's
//     server_write_IV) || explicit nonce (8), and the explicit nonce goes on
//     the wire before the ciphertext. The kernel takes the explicit nonce
//     from Info.IV and increments it per record, as it does rec_seq; we start
//     it at the sequence number, as crypto/tls and OpenSSL do, so it never
//     repeats one crypto/tls used.
//   - AES-GCM, TLS 1.3: nonce = (salt || iv) XOR the padded sequence number.
//   - ChaCha20-Poly1305, both versions (RFC 7905, RFC 8446): nonce = iv (12)
//     XOR the padded sequence number; no salt, no explicit nonce.
//
// internal/ktlstest's Sealer implements exactly this, for tests: a stock
// TLS client that decrypts its records proves that the same Info would
// make the kernel's records decryptable.
package ktls
