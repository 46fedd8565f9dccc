package ktls

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
)

// Kernel constants of <linux/tls.h> that golang.org/x/sys/unix lacks.
const (
	// OptTX is TLS_TX: setsockopt(fd, SOL_TLS, TLS_TX, &crypto_info).
	OptTX = 1
	// OptRX is TLS_RX: the same for the receive direction (Linux 4.17).
	OptRX = 2
	// CmsgSetRecordType is TLS_SET_RECORD_TYPE: a SOL_TLS control message
	// whose one data byte is the record type of the bytes sent with it.
	CmsgSetRecordType = 1
	// CmsgGetRecordType is TLS_GET_RECORD_TYPE: the SOL_TLS control
	// message recvmsg returns on a kTLS RX socket, whose one data byte is
	// the type of the record read. A read without room for it fails with
	// EIO at a record that is not application data.
	CmsgGetRecordType = 2

	// VersionTLS12 and VersionTLS13 are TLS_1_2_VERSION and TLS_1_3_VERSION.
	VersionTLS12 = 0x0303
	VersionTLS13 = 0x0304
)

// Record content types (RFC 8446 §5.1).
const (
	RecordChangeCipherSpec = 20
	RecordAlert            = 21
	RecordHandshake        = 22
	RecordApplicationData  = 23
)

// MaxPlaintext is the most plaintext one record carries (2^14).
const MaxPlaintext = 16384

// Cipher is the kernel's cipher_type.
type Cipher uint16

const (
	AES128GCM        Cipher = 51 // TLS_CIPHER_AES_GCM_128 (Linux 4.13)
	AES256GCM        Cipher = 52 // TLS_CIPHER_AES_GCM_256 (Linux 5.1)
	ChaCha20Poly1305 Cipher = 54 // TLS_CIPHER_CHACHA20_POLY1305 (Linux 5.11)
)

// Ciphers lists the ciphers this package can hand to the kernel.
var Ciphers = []Cipher{AES128GCM, AES256GCM, ChaCha20Poly1305}

func (c Cipher) String() string {
	switch c {
	case AES128GCM:
		return "aes-128-gcm"
	case AES256GCM:
		return "aes-256-gcm"
	case ChaCha20Poly1305:
		return "chacha20-poly1305"
	}
	return fmt.Sprintf("cipher(%d)", uint16(c))
}

// Sizes returns the key, iv and salt lengths of the kernel's struct.
func (c Cipher) Sizes() (key, iv, salt int, ok bool) {
	switch c {
	case AES128GCM:
		return 16, 8, 4, true
	case AES256GCM:
		return 32, 8, 4, true
	case ChaCha20Poly1305:
		return 32, 12, 0, true
	}
	return 0, 0, 0, false
}

// InfoSize is the size of the crypto_info struct for c (0 if unknown):
// 40 for AES-128-GCM, 56 for AES-256-GCM and ChaCha20-Poly1305.
func (c Cipher) InfoSize() int {
	k, iv, salt, ok := c.Sizes()
	if !ok {
		return 0
	}
	return 4 + iv + k + salt + 8
}

// ErrUnsupported: the version or cipher suite cannot be handed to the
// kernel (the connection stays in user space).
var ErrUnsupported = errors.New("ktls: version or cipher suite not offloadable")

// Info is the transmit state the kernel takes over: what
// setsockopt(SOL_TLS, TLS_TX) receives.
type Info struct {
	Version uint16 // VersionTLS12 or VersionTLS13
	Cipher  Cipher
	Key     []byte
	IV      []byte // the struct's iv: 8 bytes for AES-GCM, 12 for ChaCha20-Poly1305
	Salt    []byte // AES-GCM: 4 bytes; ChaCha20-Poly1305: none
	Seq     uint64 // sequence number of the first record the kernel seals
}

// AppendBinary appends the struct tls12_crypto_info_* for in's cipher.
func (in *Info) AppendBinary(b []byte) ([]byte, error) {
	if err := in.check(); err != nil {
		return b, err
	}
	b = binary.NativeEndian.AppendUint16(b, in.Version)
	b = binary.NativeEndian.AppendUint16(b, uint16(in.Cipher))
	b = append(b, in.IV...)
	b = append(b, in.Key...)
	b = append(b, in.Salt...)
	return binary.BigEndian.AppendUint64(b, in.Seq), nil
}

func (in *Info) check() error {
	k, iv, salt, ok := in.Cipher.Sizes()
	switch {
	case !ok:
		return fmt.Errorf("ktls: unknown cipher %d", in.Cipher)
	case in.Version != VersionTLS12 && in.Version != VersionTLS13:
		return fmt.Errorf("ktls: unknown version %#04x", in.Version)
	case len(in.Key) != k || len(in.IV) != iv || len(in.Salt) != salt:
		return fmt.Errorf("ktls: %v wants key %d, iv %d, salt %d bytes; have %d, %d, %d",
			in.Cipher, k, iv, salt, len(in.Key), len(in.IV), len(in.Salt))
	}
	return nil
}

// ParseInfo reads a crypto_info struct as AppendBinary writes it (the
// kernel emulator in tests reads exactly the bytes setsockopt would get).
func ParseInfo(b []byte) (Info, error) {
	if len(b) < 4 {
		return Info{}, fmt.Errorf("ktls: crypto_info of %d bytes", len(b))
	}
	in := Info{Version: binary.NativeEndian.Uint16(b), Cipher: Cipher(binary.NativeEndian.Uint16(b[2:]))}
	k, iv, salt, ok := in.Cipher.Sizes()
	if !ok {
		return Info{}, fmt.Errorf("ktls: unknown cipher %d", in.Cipher)
	}
	if len(b) != in.Cipher.InfoSize() {
		return Info{}, fmt.Errorf("ktls: %v crypto_info of %d bytes, want %d", in.Cipher, len(b), in.Cipher.InfoSize())
	}
	p := b[4:]
	in.IV, p = clone(p[:iv]), p[iv:]
	in.Key, p = clone(p[:k]), p[k:]
	in.Salt, p = clone(p[:salt]), p[salt:]
	in.Seq = binary.BigEndian.Uint64(p)
	return in, in.check()
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

// suite is what the derivation needs to know of a cipher suite.
type suite struct {
	cipher Cipher
	hash   func() hash.Hash
}

// suites are the AEAD suites the kernel can take, by TLS cipher suite ID.
var suites = map[uint16]suite{
	tls.TLS_AES_128_GCM_SHA256:       {AES128GCM, sha256.New},
	tls.TLS_AES_256_GCM_SHA384:       {AES256GCM, sha512.New384},
	tls.TLS_CHACHA20_POLY1305_SHA256: {ChaCha20Poly1305, sha256.New},

	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:       {AES128GCM, sha256.New},
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256:         {AES128GCM, sha256.New},
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:       {AES256GCM, sha512.New384},
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384:         {AES256GCM, sha512.New384},
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: {ChaCha20Poly1305, sha256.New},
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:   {ChaCha20Poly1305, sha256.New},
}

// CipherOf returns the kernel cipher of a TLS 1.2 or 1.3 cipher suite, and
// false when the kernel cannot take it.
func CipherOf(version, cipherSuite uint16) (Cipher, bool) {
	s, ok := suites[cipherSuite]
	if !ok {
		return 0, false
	}
	// TLS 1.3 suites carry no key exchange; TLS 1.2 suites all do.
	is13 := cipherSuite>>8 == 0x13
	if is13 != (version == tls.VersionTLS13) || (version != tls.VersionTLS12 && version != tls.VersionTLS13) {
		return 0, false
	}
	return s.cipher, true
}

// TLS13 derives the Info for a TLS 1.3 traffic secret (RFC 8446 §7.3):
// key = HKDF-Expand-Label(secret, "key", "", key_length) and
// iv = HKDF-Expand-Label(secret, "iv", "", 12). Pass the server's
// SERVER_TRAFFIC_SECRET_0 to offload the server's transmit direction.
func TLS13(cipherSuite uint16, secret []byte, seq uint64) (Info, error) {
	c, ok := CipherOf(tls.VersionTLS13, cipherSuite)
	if !ok {
		return Info{}, ErrUnsupported
	}
	s := suites[cipherSuite]
	if len(secret) != s.hash().Size() {
		return Info{}, fmt.Errorf("ktls: TLS 1.3 secret of %d bytes, want %d", len(secret), s.hash().Size())
	}
	keyLen, _, saltLen, _ := c.Sizes()
	key, err := expandLabel(s.hash, secret, "key", keyLen)
	if err != nil {
		return Info{}, err
	}
	iv, err := expandLabel(s.hash, secret, "iv", 12)
	if err != nil {
		return Info{}, err
	}
	return Info{Version: VersionTLS13, Cipher: c, Key: key, Salt: iv[:saltLen], IV: iv[saltLen:], Seq: seq}, nil
}

// Side names the writer of a direction: the server's write keys are what
// the server's transmit direction seals with, the client's what its
// receive direction opens with.
type Side int

const (
	Server Side = iota
	Client
)

// TLS12 derives the Info of writer's direction for TLS 1.2 from the
// master secret and the two hello randoms (RFC 5246 §6.3): the key block
// is client_write_MAC_key, server_write_MAC_key (both empty for AEAD
// suites), client_write_key, server_write_key, client_write_IV,
// server_write_IV.
func TLS12(cipherSuite uint16, writer Side, master, clientRandom, serverRandom []byte, seq uint64) (Info, error) {
	c, ok := CipherOf(tls.VersionTLS12, cipherSuite)
	if !ok {
		return Info{}, ErrUnsupported
	}
	if len(master) != 48 || len(clientRandom) != 32 || len(serverRandom) != 32 {
		return Info{}, fmt.Errorf("ktls: TLS 1.2 master %d, randoms %d and %d bytes; want 48, 32, 32",
			len(master), len(clientRandom), len(serverRandom))
	}
	keyLen, ivLen, saltLen, _ := c.Sizes()
	fixedIV := saltLen // GCM: the 4-byte implicit part (RFC 5288 §3)
	if c == ChaCha20Poly1305 {
		fixedIV = ivLen // RFC 7905 §2: a 12-byte IV
	}
	seed := make([]byte, 0, 64)
	seed = append(append(seed, serverRandom...), clientRandom...)
	block := prf12(suites[cipherSuite].hash, master, "key expansion", seed, 2*keyLen+2*fixedIV)
	key, iv := block[:keyLen], block[2*keyLen:2*keyLen+fixedIV]
	if writer == Server {
		key, iv = block[keyLen:2*keyLen], block[2*keyLen+fixedIV:2*keyLen+2*fixedIV]
	}
	in := Info{Version: VersionTLS12, Cipher: c, Key: key, Seq: seq}
	if c == ChaCha20Poly1305 {
		in.IV = iv
	} else {
		in.Salt = iv
		// The explicit nonce the kernel starts from (and increments per
		// record): the sequence number, as crypto/tls uses, so no nonce
		// repeats one sent from user space. (Opening, the kernel reads
		// each record's own.)
		in.IV = binary.BigEndian.AppendUint64(nil, seq)
	}
	return in, nil
}
