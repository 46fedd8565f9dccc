package ktls

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"hash"
	"testing"
)

var controlCases = []struct {
	name string
	typ  uint8
	body []byte
	want Control
	ok   bool
}{
	{"close_notify", RecordAlert, []byte{1, 0}, Control{Kind: KindCloseNotify}, true},
	{"fatal alert", RecordAlert, []byte{2, 20}, Control{Kind: KindAlert, Alert: 20}, true},
	{"user_canceled", RecordAlert, []byte{1, 90}, Control{Kind: KindAlert, Alert: 90}, true},
	{"short alert", RecordAlert, []byte{1}, Control{Kind: KindAlert}, false},
	{"KeyUpdate", RecordHandshake, []byte{24, 0, 0, 1, 0}, Control{Kind: KindKeyUpdate}, true},
	{"KeyUpdate update_requested", RecordHandshake, []byte{24, 0, 0, 1, 1}, Control{Kind: KindKeyUpdate, UpdateRequested: true}, true},
	{"KeyUpdate bad request", RecordHandshake, []byte{24, 0, 0, 1, 2}, Control{Kind: KindHandshake}, false},
	{"KeyUpdate then more", RecordHandshake, []byte{24, 0, 0, 1, 0, 24, 0, 0, 1, 0}, Control{Kind: KindHandshake}, false},
	{"ClientHello", RecordHandshake, []byte{1, 0, 0, 2, 3, 3}, Control{Kind: KindHandshake}, false},
	{"ChangeCipherSpec", RecordChangeCipherSpec, []byte{1}, Control{Kind: KindOther}, false},
}

// TestParseControl: the record types and messages of RFC 8446 §4.6.3
// (KeyUpdate) and §6 (alerts), as the server acts on them.
func TestParseControl(t *testing.T) {
	for _, tt := range controlCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseControl(tt.typ, tt.body)
			if got != tt.want || (err == nil) != tt.ok {
				t.Errorf("ParseControl(%d, %x) = %+v, %v; want %+v, ok %v", tt.typ, tt.body, got, err, tt.want, tt.ok)
			}
		})
	}
	if got, err := ParseControl(RecordHandshake, KeyUpdateMessage); err != nil || got != (Control{Kind: KindKeyUpdate}) {
		t.Errorf("ParseControl(KeyUpdateMessage) = %+v, %v; want a KeyUpdate not requesting one", got, err)
	}
}

// TestNextTrafficSecret: RFC 8446 §7.2's derivation, written out here
// with crypto/hkdf and the HkdfLabel of §7.1 independently of
// expandLabel, for both hashes.
func TestNextTrafficSecret(t *testing.T) {
	for _, tt := range []struct {
		suite uint16
		h     func() hash.Hash
	}{
		{tls.TLS_AES_128_GCM_SHA256, sha256.New},
		{tls.TLS_AES_256_GCM_SHA384, sha512.New384},
		{tls.TLS_CHACHA20_POLY1305_SHA256, sha256.New},
	} {
		n := tt.h().Size()
		secret := fill(n, 7)
		label := "tls13 traffic upd"
		info := append([]byte{0, byte(n), byte(len(label))}, label...)
		info = append(info, 0)
		want, err := hkdf.Expand(tt.h, secret, string(info), n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := NextTrafficSecret(tt.suite, secret)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("NextTrafficSecret(%s) = %x, %v; want %x", tls.CipherSuiteName(tt.suite), got, err, want)
		}
		if _, err := NextTrafficSecret(tt.suite, secret[:n-1]); err == nil {
			t.Errorf("NextTrafficSecret(%s) took a %d-byte secret", tls.CipherSuiteName(tt.suite), n-1)
		}
	}
	if _, err := NextTrafficSecret(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, fill(32, 1)); err == nil {
		t.Errorf("NextTrafficSecret took a TLS 1.2 suite")
	}
}

// TestFramer: reads of at most Room bytes stop at every record boundary,
// whatever the stream's records, and the headers come out in order.
func TestFramer(t *testing.T) {
	stream := handshakeStream(fill(32, 5))
	stream = append(stream, RecordApplicationData, 3, 3, 0, 0) // an empty record
	for _, limit := range []int{1, 2, 3, 5, 7, 100, 1 << 16} {
		var f Framer
		var types []byte
		for p := stream; len(p) > 0; {
			k := min(f.Room(), limit, len(p))
			n, header := f.Advance(p[:k])
			if n != k {
				t.Fatalf("limit %d: Advance took %d of %d bytes within Room", limit, n, k)
			}
			if header {
				types = append(types, f.Header()[0])
			}
			p = p[n:]
		}
		want := []byte{22, 22, 22, 22, 20, 22, 23}
		if !bytes.Equal(types, want) || !f.Boundary() {
			t.Errorf("limit %d: headers %v, boundary %v; want %v, true", limit, types, f.Boundary(), want)
		}
	}
}

func FuzzParseControl(f *testing.F) {
	for _, tt := range controlCases {
		f.Add(tt.typ, tt.body)
	}
	f.Fuzz(func(t *testing.T, typ uint8, body []byte) {
		c, err := ParseControl(typ, body)
		if err == nil && c.Kind != KindCloseNotify && c.Kind != KindAlert && c.Kind != KindKeyUpdate {
			t.Fatalf("ParseControl(%d, %x) = %+v with no error", typ, body, c)
		}
		if c.Kind == KindKeyUpdate && (err != nil || len(body) != 5) {
			t.Fatalf("ParseControl(%d, %x): KeyUpdate from %d bytes, %v", typ, body, len(body), err)
		}
	})
}

func FuzzFramer(f *testing.F) {
	f.Add(handshakeStream(fill(32, 5)), 3)
	f.Fuzz(func(t *testing.T, stream []byte, limit int) {
		limit = max(limit, 1)
		var f Framer
		var scan HandshakeScanner
		scan.Write(stream)
		for p := stream; len(p) > 0; {
			room := f.Room()
			if room <= 0 {
				t.Fatalf("Room %d", room)
			}
			n, _ := f.Advance(p[:min(room, limit, len(p))])
			if n == 0 {
				t.Fatal("Advance took nothing")
			}
			p = p[n:]
		}
		if f.Boundary() != scan.Complete() {
			t.Fatalf("Boundary %v, the scanner of the whole stream says %v", f.Boundary(), scan.Complete())
		}
	})
}
