package httpmsg

import (
	"bytes"
	"testing"
)

var obsFoldTests = []struct {
	name string
	raw  string
	want bool
}{
	{"empty", "", false},
	{"plain", "Host: t\r\nX-A: b\r\n\r\n", false},
	{"space inside a value", "Host: t\r\nX-A: b c\r\n\r\n", false},
	{"tab inside a value", "Host: t\r\nX-A:\tb\r\n\r\n", false},
	{"folded with a space", "Host: t\r\nX-A: b\r\n c\r\n\r\n", true},
	{"folded with a tab", "Host: t\r\nX-A: b\r\n\tc\r\n\r\n", true},
	{"folded content-length", "Host: t\r\nX: y\r\n Content-Length: 39\r\n\r\n", true},
	{"bare LF then space", "Host: t\nX-A: b\n c\n\n", true},
	{"leading space", " Host: t\r\n\r\n", true},
	{"leading tab", "\tHost: t\r\n\r\n", true},
	{"space before CR", "Host: t \r\n\r\n", false},
}

func TestHasObsFold(t *testing.T) {
	for _, tt := range obsFoldTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HasObsFold([]byte(tt.raw)); got != tt.want {
				t.Errorf("HasObsFold(%q) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

// FuzzObsFold: HasObsFold agrees with a plain statement of the rule (some
// line, the first included, starts with SP or HTAB) on every input.
func FuzzObsFold(f *testing.F) {
	for _, tt := range obsFoldTests {
		f.Add([]byte(tt.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := false
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
				want = true
			}
		}
		if got := HasObsFold(raw); got != want {
			t.Fatalf("HasObsFold(%q) = %v, want %v", raw, got, want)
		}
	})
}
