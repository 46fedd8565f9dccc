package coding

import (
	"bytes"
	"testing"
)

// FuzzGzip: no panic, and gzip is chosen only when the field names gzip
// (or x-gzip) or "*".
func FuzzGzip(f *testing.F) {
	for _, c := range gzipCases {
		if len(c.lines) > 0 {
			f.Add(c.lines[0])
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Gzip([][]byte{[]byte(s)})
		low := bytes.ToLower([]byte(s))
		if got && !bytes.Contains(low, []byte("gzip")) && !bytes.Contains(low, []byte("*")) {
			t.Errorf("Gzip(%q) = true, but it names neither gzip nor *", s)
		}
		if got != Gzip([][]byte{[]byte(s), nil}) {
			t.Errorf("Gzip(%q) changed with an empty second line", s)
		}
	})
}
