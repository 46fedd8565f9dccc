package httpmsg

import (
	"bytes"
	"strings"
	"testing"
)

func TestAsksClose(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{"Host: a\r\n\r\n", false},
		{"Host: a\r\nConnection: close\r\n\r\n", true},
		{"connection: Keep-Alive, CLOSE\r\n", true},
		{"Connection: keep-alive\r\n", false},
		{"Connection: closed\r\n", false},
		{"X-Connection: close\r\n", false},
		{"Host: a\r\nConnection: te\r\nConnection: close", true},
	} {
		if got := AsksClose([]byte(tc.raw)); got != tc.want {
			t.Errorf("AsksClose(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

// FuzzAsksClose: never panics; a block without "close" anywhere never asks.
func FuzzAsksClose(f *testing.F) {
	f.Add([]byte("Connection: close\r\n"))
	f.Add([]byte("connection:x,close ,y\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if AsksClose(raw) && !containsFold(raw, "close") {
			t.Errorf("AsksClose(%q) = true without a close option", raw)
		}
	})
}

func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		ok := true
		for j := 0; j < len(s); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != s[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestTidyTransferEncoding(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Transfer-Encoding: ,chunked\r\n", "Transfer-Encoding:  chunked\r\n"},
		{"Transfer-Encoding: chunked,\r\n", "Transfer-Encoding: chunked \r\n"},
		{"transfer-encoding: chunked, ,\r\n", "transfer-encoding: chunked   \r\n"},
		{"Transfer-Encoding: gzip,,chunked\r\n", "Transfer-Encoding: gzip, chunked\r\n"},
		{"Transfer-Encoding: gzip, chunked\r\n", "Transfer-Encoding: gzip, chunked\r\n"},
		{"Transfer-Encoding: ,chunked", "Transfer-Encoding: ,chunked"}, // incomplete: left alone
		{"X-List: ,a\r\nHost: t\r\n", "X-List: ,a\r\nHost: t\r\n"},     // only Transfer-Encoding
	}
	for _, tt := range tests {
		b := []byte(tt.in)
		TidyTransferEncoding(b)
		if string(b) != tt.want {
			t.Errorf("TidyTransferEncoding(%q) = %q, want %q", tt.in, b, tt.want)
		}
	}
}

// FuzzTidyTransferEncoding: the length never changes, only commas become
// spaces, and the non-empty elements of every line stay as they were.
func FuzzTidyTransferEncoding(f *testing.F) {
	f.Add([]byte("Transfer-Encoding: ,chunked\r\n"))
	f.Add([]byte("Transfer-Encoding: a,,b, ,c,\r\nX: ,\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := append([]byte(nil), b...)
		TidyTransferEncoding(b)
		if len(b) != len(orig) {
			t.Fatalf("length changed")
		}
		for i := range b {
			if b[i] != orig[i] && !(orig[i] == ',' && b[i] == ' ') {
				t.Fatalf("byte %d changed from %q to %q", i, orig[i], b[i])
			}
		}
		// The elements of each line's value (after its first colon).
		elems := func(b []byte) (out []string) {
			for line := range bytes.SplitSeq(b, []byte("\n")) {
				_, v, _ := bytes.Cut(line, []byte(":"))
				for e := range bytes.SplitSeq(v, []byte(",")) {
					if e := bytes.TrimSpace(e); len(e) > 0 {
						out = append(out, string(e))
					}
				}
				out = append(out, "\n")
			}
			return out
		}
		if a, z := elems(orig), elems(b); strings.Join(a, "|") != strings.Join(z, "|") {
			t.Fatalf("elements %q became %q", a, z)
		}
	})
}

func TestCodingsBeforeChunked(t *testing.T) {
	for v, want := range map[string]bool{
		"chunked":          false,
		"gzip, chunked":    true,
		"gzip,,Chunked":    true,
		"chunked, gzip":    false,
		", chunked":        false,
		"deflate,chunked ": true,
		"identity":         false,
	} {
		if got := CodingsBeforeChunked([]byte(v)); got != want {
			t.Errorf("CodingsBeforeChunked(%q) = %v, want %v", v, got, want)
		}
	}
}
