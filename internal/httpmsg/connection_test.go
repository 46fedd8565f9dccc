package httpmsg

import "testing"

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
