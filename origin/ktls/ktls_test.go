package ktls

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTLS13Vectors: RFC 8448 §3 (Simple 1-RTT Handshake), "derive write
// traffic keys": the secret (shown there as PRK) to key and iv.
func TestTLS13Vectors(t *testing.T) {
	tests := []struct {
		name, secret, key, iv string
	}{
		{"server handshake", "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38",
			"3fce516009c21727d0f2e4e86ee403bc", "5d313eb2671276ee13000b30"},
		{"server application", "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643",
			"9f02283b6c9c07efc26bb9f2ac92e356", "cf782b88dd83549aadf1e984"},
		{"client application", "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5",
			"17422dda596ed5d9acd890e3c63f5051", "5b78923dee08579033e523d9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := TLS13(tls.TLS_AES_128_GCM_SHA256, unhex(t, tt.secret), 7)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(in.Key); got != tt.key {
				t.Errorf("key = %s, want %s", got, tt.key)
			}
			if got := hex.EncodeToString(append(in.Salt, in.IV...)); got != tt.iv {
				t.Errorf("salt||iv = %s, want %s", got, tt.iv)
			}
			if in.Cipher != AES128GCM || in.Version != VersionTLS13 || in.Seq != 7 || len(in.Salt) != 4 {
				t.Errorf("Info = %v %#x seq %d salt %d bytes, want aes-128-gcm 0x304 seq 7 salt 4", in.Cipher, in.Version, in.Seq, len(in.Salt))
			}
		})
	}
}

// TestPRF12Vectors: the TLS 1.2 PRF test vectors published on the IETF TLS
// list (P_SHA256 and P_SHA384, label "test label").
func TestPRF12Vectors(t *testing.T) {
	tests := []struct {
		name               string
		h                  func() hash.Hash
		secret, seed, want string
	}{
		{"sha256", sha256.New, "9bbe436ba940f017b17652849a71db35", "a0ba9f936cda311827a6f796ffd5198c",
			"e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66"},
		{"sha384", sha512.New384, "b80b733d6ceefcdc71566ea48e5567df", "cd665cf6a8447dd6ff8b27555edb7465",
			"7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cde9ca0faa60be9fe34f82b1233c9146a0e534cb400fed2700884f9dc236f80edd8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abfdad05d9184259b5bf8cd4d90fa0d31e2dec479e4f1a26066f2eea9a69236a3e52655c9e9aee691c8f3a26854308d5eaa3be85e0990703d73e56f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.want)
			got := prf12(tt.h, unhex(t, tt.secret), "test label", unhex(t, tt.seed), len(want))
			if !bytes.Equal(got, want) {
				t.Errorf("prf12 = %x\nwant   %x", got, want)
			}
		})
	}
}

// TestInfoLayout: the bytes match struct tls12_crypto_info_* of
// <linux/tls.h> field by field (host-order u16 version and cipher_type,
// then iv, key, salt, and a big-endian rec_seq), and parse back.
func TestInfoLayout(t *testing.T) {
	tests := []struct {
		name                         string
		in                           Info
		size, ivOff, keyOff, saltOff int
	}{
		{"aes-128-gcm", Info{VersionTLS12, AES128GCM, fill(16, 0xee), fill(8, 0x11), fill(4, 0x22), 0x0102030405060708}, 40, 4, 12, 28},
		{"aes-256-gcm", Info{VersionTLS13, AES256GCM, fill(32, 0xee), fill(8, 0x11), fill(4, 0x22), 1}, 56, 4, 12, 44},
		{"chacha20-poly1305", Info{VersionTLS13, ChaCha20Poly1305, fill(32, 0xee), fill(12, 0x11), nil, 0}, 56, 4, 16, 48},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.in.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != tt.size || tt.in.Cipher.InfoSize() != tt.size {
				t.Fatalf("AppendBinary: %d bytes (InfoSize %d), want %d", len(b), tt.in.Cipher.InfoSize(), tt.size)
			}
			if v, c := binary.NativeEndian.Uint16(b), binary.NativeEndian.Uint16(b[2:]); v != tt.in.Version || Cipher(c) != tt.in.Cipher {
				t.Errorf("header = version %#x cipher %d, want %#x %d", v, c, tt.in.Version, tt.in.Cipher)
			}
			if !bytes.Equal(b[tt.ivOff:tt.keyOff], tt.in.IV) || !bytes.Equal(b[tt.keyOff:tt.saltOff], tt.in.Key) ||
				!bytes.Equal(b[tt.saltOff:tt.size-8], tt.in.Salt) {
				t.Errorf("iv/key/salt misplaced in %x", b)
			}
			if seq := binary.BigEndian.Uint64(b[tt.size-8:]); seq != tt.in.Seq {
				t.Errorf("rec_seq = %#x, want %#x (big-endian)", seq, tt.in.Seq)
			}
			back, err := ParseInfo(b)
			if err != nil || fmt.Sprint(back) != fmt.Sprint(tt.in) {
				t.Errorf("ParseInfo = %+v, %v; want %+v", back, err, tt.in)
			}
		})
	}
	bad := Info{VersionTLS13, AES128GCM, fill(15, 0), fill(8, 0), fill(4, 0), 0}
	if _, err := bad.AppendBinary(nil); err == nil {
		t.Errorf("AppendBinary accepted a 15-byte AES-128 key")
	}
}

func fill(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }

func TestCipherOf(t *testing.T) {
	tests := []struct {
		version, suite uint16
		want           Cipher
		ok             bool
	}{
		{tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256, AES128GCM, true},
		{tls.VersionTLS13, tls.TLS_AES_256_GCM_SHA384, AES256GCM, true},
		{tls.VersionTLS13, tls.TLS_CHACHA20_POLY1305_SHA256, ChaCha20Poly1305, true},
		{tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, AES128GCM, true},
		{tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, AES256GCM, true},
		{tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, ChaCha20Poly1305, true},
		{tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, 0, false},
		{tls.VersionTLS12, tls.TLS_AES_128_GCM_SHA256, 0, false},
		{tls.VersionTLS13, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, 0, false},
		{tls.VersionTLS11, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, 0, false},
	}
	for _, tt := range tests {
		got, ok := CipherOf(tt.version, tt.suite)
		if got != tt.want || ok != tt.ok {
			t.Errorf("CipherOf(%#x, %s) = %v, %v; want %v, %v", tt.version, tls.CipherSuiteName(tt.suite), got, ok, tt.want, tt.ok)
		}
	}
}

// TestTLS12KeyBlock: each side's key and IV sit where RFC 5246 §6.3 puts
// them in the key block (client_write_key, server_write_key,
// client_write_IV, server_write_IV), and the explicit nonce starts at the
// sequence.
func TestTLS12KeyBlock(t *testing.T) {
	master, cr, sr := fill(48, 1), fill(32, 2), fill(32, 3)
	for _, tt := range []struct {
		suite         uint16
		h             func() hash.Hash
		keyLen, fixIV int
	}{
		{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, sha256.New, 16, 4},
		{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, sha512.New384, 32, 4},
		{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, sha256.New, 32, 12},
	} {
		block := prf12(tt.h, master, "key expansion", append(append([]byte{}, sr...), cr...), 2*tt.keyLen+2*tt.fixIV)
		for _, side := range []struct {
			name            string
			writer          Side
			wantKey, wantIV []byte
		}{
			{"server", Server, block[tt.keyLen : 2*tt.keyLen], block[2*tt.keyLen+tt.fixIV:]},
			{"client", Client, block[:tt.keyLen], block[2*tt.keyLen : 2*tt.keyLen+tt.fixIV]},
		} {
			in, err := TLS12(tt.suite, side.writer, master, cr, sr, 1)
			if err != nil {
				t.Fatal(err)
			}
			gotIV := in.Salt
			if tt.fixIV == 12 {
				gotIV = in.IV
			} else if binary.BigEndian.Uint64(in.IV) != 1 {
				t.Errorf("%s %s: explicit nonce %x, want the sequence number 1", tls.CipherSuiteName(tt.suite), side.name, in.IV)
			}
			if !bytes.Equal(in.Key, side.wantKey) || !bytes.Equal(gotIV, side.wantIV) {
				t.Errorf("%s %s: key %x iv %x, want %x %x", tls.CipherSuiteName(tt.suite), side.name, in.Key, gotIV, side.wantKey, side.wantIV)
			}
		}
	}
	if _, err := TLS12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, Server, master[:47], cr, sr, 1); err == nil {
		t.Errorf("TLS12 accepted a 47-byte master secret")
	}
}

func TestKeyLog(t *testing.T) {
	var k KeyLog
	cr := strings.Repeat("ab", 32)
	lines := []string{
		"CLIENT_HANDSHAKE_TRAFFIC_SECRET " + cr + " " + strings.Repeat("01", 32) + "\n",
		"SERVER_TRAFFIC_SECRET_0 " + cr + " " + strings.Repeat("02", 48) + "\n",
		"CLIENT_TRAFFIC_SECRET_0 " + cr + " " + strings.Repeat("03", 32) + "\n",
		"CLIENT_RANDOM " + cr + " " + strings.Repeat("04", 48) + "\n",
	}
	for _, l := range lines {
		if n, err := k.Write([]byte(l)); err != nil || n != len(l) {
			t.Fatalf("Write(%q) = %d, %v", l, n, err)
		}
	}
	if got := k.ServerTrafficSecret(); !bytes.Equal(got, fill(48, 2)) {
		t.Errorf("ServerTrafficSecret = %x", got)
	}
	if got := k.ClientTrafficSecret(); !bytes.Equal(got, fill(32, 3)) {
		t.Errorf("ClientTrafficSecret = %x", got)
	}
	if got := k.MasterSecret(); !bytes.Equal(got, fill(48, 4)) {
		t.Errorf("MasterSecret = %x", got)
	}
	if got := k.ClientRandom(); !bytes.Equal(got, fill(32, 0xab)) {
		t.Errorf("ClientRandom = %x", got)
	}
	for _, bad := range []string{"", "CLIENT_RANDOM", "CLIENT_RANDOM zz " + strings.Repeat("04", 48), "CLIENT_RANDOM " + cr + " " + strings.Repeat("04", 49)} {
		if _, err := k.Write([]byte(bad)); err == nil {
			t.Errorf("Write(%q): no error", bad)
		}
	}
	k.Clear()
	if k.MasterSecret() != nil || k.ServerTrafficSecret() != nil {
		t.Errorf("Clear left secrets behind")
	}
}

// handshakeStream is a TLS 1.2 server flight as it goes on the wire:
// ServerHello (with random), Certificate, ServerHelloDone, then after the
// client's flight NewSessionTicket, ChangeCipherSpec and Finished.
func handshakeStream(random []byte) []byte {
	rec := func(typ byte, body []byte) []byte {
		return append([]byte{typ, 3, 3, byte(len(body) >> 8), byte(len(body))}, body...)
	}
	sh := append([]byte{2, 0, 0, 70, 3, 3}, random...)
	sh = append(sh, make([]byte, 38)...)
	var s []byte
	s = append(s, rec(RecordHandshake, sh)...)
	s = append(s, rec(RecordHandshake, make([]byte, 900))...)
	s = append(s, rec(RecordHandshake, []byte{14, 0, 0, 0})...)
	s = append(s, rec(RecordHandshake, make([]byte, 200))...)
	s = append(s, rec(RecordChangeCipherSpec, []byte{1})...)
	s = append(s, rec(RecordHandshake, make([]byte, 40))...)
	return s
}

// TestHandshakeScanner: the random and the record count survive any split
// of the stream into writes.
func TestHandshakeScanner(t *testing.T) {
	random := make([]byte, 32)
	for i := range random {
		random[i] = byte(i * 7)
	}
	stream := handshakeStream(random)
	for split := 1; split < len(stream); split += 3 {
		var s HandshakeScanner
		for p := stream; len(p) > 0; {
			k := min(split, len(p))
			s.Write(p[:k])
			p = p[k:]
		}
		if got := s.ServerRandom(); !bytes.Equal(got, random) {
			t.Fatalf("split %d: ServerRandom = %x, want %x", split, got, random)
		}
		if n, ok := s.RecordsAfterCCS(); n != 1 || !ok {
			t.Fatalf("split %d: RecordsAfterCCS = %d, %v; want 1, true", split, n, ok)
		}
		if !s.Complete() {
			t.Fatalf("split %d: not complete at the end of the stream", split)
		}
	}
	var s HandshakeScanner
	s.Write([]byte{RecordAlert, 3, 3, 0, 2, 2, 40})
	if s.ServerRandom() != nil {
		t.Errorf("ServerRandom of an alert stream: want nil")
	}
}

func FuzzParseInfo(f *testing.F) {
	for _, in := range []Info{
		{VersionTLS12, AES128GCM, fill(16, 1), fill(8, 2), fill(4, 3), 1},
		{VersionTLS13, ChaCha20Poly1305, fill(32, 1), fill(12, 2), nil, 0},
	} {
		b, _ := in.AppendBinary(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInfo(b)
		if err != nil {
			return
		}
		out, err := in.AppendBinary(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("ParseInfo(%x) then AppendBinary = %x, %v", b, out, err)
		}
	})
}

func FuzzHandshakeScanner(f *testing.F) {
	f.Add(handshakeStream(fill(32, 5)), 7)
	f.Fuzz(func(t *testing.T, stream []byte, split int) {
		if split <= 0 {
			split = 1
		}
		var whole, parts HandshakeScanner
		whole.Write(stream)
		for p := stream; len(p) > 0; {
			k := min(split, len(p))
			parts.Write(p[:k])
			p = p[k:]
		}
		if whole != parts {
			t.Fatalf("split %d changes the scanner's state", split)
		}
	})
}

func FuzzKeyLog(f *testing.F) {
	f.Add([]byte("CLIENT_RANDOM " + strings.Repeat("ab", 32) + " " + strings.Repeat("04", 48) + "\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		var k KeyLog
		k.Write(line)
		if s := k.MasterSecret(); s != nil && len(s) > 48 {
			t.Fatalf("secret of %d bytes", len(s))
		}
	})
}
