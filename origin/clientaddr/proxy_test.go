package clientaddr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// v2 builds a PROXY v2 header: command (0 LOCAL, 1 PROXY), family byte,
// address block and TLV bytes.
func v2(cmd, fam byte, addrs []byte, tlv []byte) []byte {
	b := append([]byte(nil), proxyV2Sig...)
	b = append(b, 0x20|cmd, fam)
	b = binary.BigEndian.AppendUint16(b, uint16(len(addrs)+len(tlv)))
	return append(append(b, addrs...), tlv...)
}

func v4Block(src, dst string, sport, dport uint16) []byte {
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	b := append(s[:], d[:]...)
	b = binary.BigEndian.AppendUint16(b, sport)
	return binary.BigEndian.AppendUint16(b, dport)
}

func v6Block(src, dst string, sport, dport uint16) []byte {
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	b := append(s[:], d[:]...)
	b = binary.BigEndian.AppendUint16(b, sport)
	return binary.BigEndian.AppendUint16(b, dport)
}

func TestParseProxy(t *testing.T) {
	const req = "GET / HTTP/1.1\r\n"
	awsTLV := []byte{0xEA, 0x00, 0x05, 0x01, 'v', 'p', 'c', 'e'}
	tests := []struct {
		name   string
		in     []byte
		source string // "" with local
		local  bool
		n      int
		err    error
	}{
		{"v1 TCP4", []byte("PROXY TCP4 198.51.100.1 10.0.0.1 56324 443\r\n" + req), "198.51.100.1:56324", false, 44, nil},
		{"v1 TCP6", []byte("PROXY TCP6 2001:db8::1 2001:db8::2 4711 80\r\n"), "[2001:db8::1]:4711", false, 44, nil},
		{"v1 UNKNOWN", []byte("PROXY UNKNOWN\r\n" + req), "", true, 15, nil},
		{"v1 UNKNOWN with junk", []byte("PROXY UNKNOWN ffff::1 ::1 1 2\r\n"), "", true, 31, nil},
		{"v1 partial", []byte("PROXY TCP4 198.51.1"), "", false, 0, ErrIncomplete},
		{"v1 signature partial", []byte("PRO"), "", false, 0, ErrIncomplete},
		{"v1 family mismatch", []byte("PROXY TCP4 2001:db8::1 2001:db8::2 1 2\r\n"), "", false, 0, ErrMalformedProxy},
		{"v1 port leading zero", []byte("PROXY TCP4 1.2.3.4 5.6.7.8 080 443\r\n"), "", false, 0, ErrMalformedProxy},
		{"v1 port too big", []byte("PROXY TCP4 1.2.3.4 5.6.7.8 65536 443\r\n"), "", false, 0, ErrMalformedProxy},
		{"v1 too few fields", []byte("PROXY TCP4 1.2.3.4 5.6.7.8 80\r\n"), "", false, 0, ErrMalformedProxy},
		{"v1 double space", []byte("PROXY TCP4  1.2.3.4 5.6.7.8 80 443\r\n"), "", false, 0, ErrMalformedProxy},
		{"v1 bare LF", []byte("PROXY TCP4 1.2.3.4 5.6.7.8 80 443\n"), "", false, 0, ErrMalformedProxy},
		{"v1 no CRLF in 107 bytes", append([]byte("PROXY TCP4 "), bytes.Repeat([]byte("1"), 120)...), "", false, 0, ErrMalformedProxy},
		{"plain HTTP", []byte(req), "", false, 0, ErrNotProxy},
		{"TLS ClientHello", []byte{0x16, 0x03, 0x01, 0x02, 0x00}, "", false, 0, ErrNotProxy},
		{"v2 TCP4", append(v2(1, 0x11, v4Block("198.51.100.1", "10.0.0.1", 56324, 443), nil), req...), "198.51.100.1:56324", false, 28, nil},
		{"v2 TCP4 with AWS TLV", v2(1, 0x11, v4Block("198.51.100.1", "10.0.0.1", 1, 443), awsTLV), "198.51.100.1:1", false, 36, nil},
		{"v2 TCP6", v2(1, 0x21, v6Block("2001:db8::1", "2001:db8::2", 4711, 80), nil), "[2001:db8::1]:4711", false, 52, nil},
		{"v2 TCP6 mapped", v2(1, 0x21, v6Block("::ffff:198.51.100.1", "::ffff:10.0.0.1", 7, 80), nil), "198.51.100.1:7", false, 52, nil},
		{"v2 LOCAL", v2(0, 0x00, nil, nil), "", true, 16, nil},
		{"v2 LOCAL with addresses", v2(0, 0x11, v4Block("1.2.3.4", "5.6.7.8", 1, 2), nil), "", true, 28, nil},
		{"v2 PROXY UNSPEC", v2(1, 0x00, nil, nil), "", true, 16, nil},
		{"v2 UDP refused", v2(1, 0x12, v4Block("1.2.3.4", "5.6.7.8", 1, 2), nil), "", false, 0, ErrMalformedProxy},
		{"v2 short address block", v2(1, 0x11, []byte{1, 2, 3}, nil), "", false, 0, ErrMalformedProxy},
		{"v2 version 1", append(append([]byte(nil), proxyV2Sig...), 0x11, 0x11, 0, 0), "", false, 0, ErrMalformedProxy},
		{"v2 command 2", append(append([]byte(nil), proxyV2Sig...), 0x22, 0x11, 0, 0), "", false, 0, ErrMalformedProxy},
		{"v2 partial header", proxyV2Sig[:7], "", false, 0, ErrIncomplete},
		{"v2 partial body", v2(1, 0x11, v4Block("1.2.3.4", "5.6.7.8", 1, 2), nil)[:20], "", false, 0, ErrIncomplete},
		{"v2 too long", append(append([]byte(nil), proxyV2Sig...), 0x21, 0x11, 0xff, 0xff), "", false, 0, ErrMalformedProxy},
		{"v2 bad signature", []byte("\r\n\r\nX"), "", false, 0, ErrNotProxy},
		{"empty", nil, "", false, 0, ErrIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, n, err := ParseProxy(tt.in)
			if !errors.Is(err, tt.err) || n != tt.n || h.Local != tt.local {
				t.Fatalf("ParseProxy(%q) = %+v, %d, %v; want local=%v, %d, %v", tt.in, h, n, err, tt.local, tt.n, tt.err)
			}
			if tt.source != "" && h.Source.String() != tt.source {
				t.Errorf("ParseProxy(%q).Source = %s, want %s", tt.in, h.Source, tt.source)
			}
		})
	}
}

// FuzzParseProxy: never a panic; a header's length lies inside the input
// and within the limits; a parsed header parses the same from exactly its
// own bytes (it never needed a byte past n); a prefix of a valid header is
// incomplete, never something else.
func FuzzParseProxy(f *testing.F) {
	f.Add([]byte("PROXY TCP4 198.51.100.1 10.0.0.1 56324 443\r\nGET /"))
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add(v2(1, 0x11, v4Block("198.51.100.1", "10.0.0.1", 1, 2), []byte{1, 0, 1, 9}))
	f.Add(v2(1, 0x21, v6Block("2001:db8::1", "::1", 1, 2), nil))
	f.Add(v2(0, 0, nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseProxy(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("ParseProxy(%q): error %v with n = %d", b, err, n)
			}
			return
		}
		if n < 15 || n > len(b) || n > MaxProxyHeader {
			t.Fatalf("ParseProxy(%q): n = %d out of range", b, n)
		}
		if !h.Local && !h.Source.IsValid() {
			t.Fatalf("ParseProxy(%q): neither local nor a source", b)
		}
		h2, n2, err2 := ParseProxy(b[:n])
		if err2 != nil || n2 != n || h2 != h {
			t.Fatalf("ParseProxy(%q) = %+v, %d; of its own %d bytes = %+v, %d, %v", b, h, n, n, h2, n2, err2)
		}
		for i := range n {
			if _, _, err := ParseProxy(b[:i]); !errors.Is(err, ErrIncomplete) {
				t.Fatalf("ParseProxy(%q) of a %d-byte prefix of a valid header = %v, want ErrIncomplete", b[:n], i, err)
			}
		}
	})
}
