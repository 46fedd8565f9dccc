package httpmsg

import (
	"bytes"
	"testing"
)

var bareLFTests = []struct {
	name string
	raw  string
	want bool
}{
	{"empty", "", false},
	{"CRLF throughout", "GET / HTTP/1.1\r\nHost: t\r\n\r\n", false},
	{"incomplete, CRLF so far", "GET / HTTP/1.1\r\nHo", false},
	{"a CR alone is no LF", "GET / HTTP/1.1\rHost: t\r\n", false},
	{"bare LF everywhere", "GET / HTTP/1.1\nHost: t\n\n", true},
	{"bare LF after the request line", "GET / HTTP/1.1\nHost: t\r\n\r\n", true},
	{"bare LF inside the fields", "GET / HTTP/1.1\r\nX: a\nContent-Length: 5\r\n\r\n", true},
	{"bare LF ends the block", "GET / HTTP/1.1\r\nHost: t\r\n\n", true},
	{"leading LF", "\nGET / HTTP/1.1\r\n\r\n", true},
	{"leading CRLF", "\r\nGET / HTTP/1.1\r\n\r\n", false},
}

func TestHasBareLF(t *testing.T) {
	for _, tt := range bareLFTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HasBareLF([]byte(tt.raw)); got != tt.want {
				t.Errorf("HasBareLF(%q) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

// FuzzBareLF: HasBareLF agrees with a plain statement of the rule (an LF
// remains once every CRLF is taken out) on every input.
func FuzzBareLF(f *testing.F) {
	for _, tt := range bareLFTests {
		f.Add([]byte(tt.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := bytes.IndexByte(bytes.ReplaceAll(raw, []byte("\r\n"), nil), '\n') >= 0
		if got := HasBareLF(raw); got != want {
			t.Fatalf("HasBareLF(%q) = %v, want %v", raw, got, want)
		}
	})
}

var bareCRTests = []struct {
	name string
	raw  string
	want bool
}{
	{"empty", "", false},
	{"CRLF throughout", "GET / HTTP/1.1\r\nHost: t\r\n\r\n", false},
	{"a CR at the end may be a CRLF's half", "GET / HTTP/1.1\r", false},
	{"bare LF is no CR", "GET / HTTP/1.1\nHost: t\n\n", false},
	{"CR inside a field name", "GET / HTTP/1.1\r\nContent\rLength: 3\r\n\r\n", true},
	{"CR before the blank line's CRLF", "PUT / HTTP/1.1\r\nContent-Length: 3\r\n\rabc", true},
	{"CR CR LF", "GET / HTTP/1.1\r\r\n\r\n", true},
}

func TestHasBareCR(t *testing.T) {
	for _, tt := range bareCRTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HasBareCR([]byte(tt.raw)); got != tt.want {
				t.Errorf("HasBareCR(%q) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

// FuzzBareCR: HasBareCR agrees with a plain statement of the rule (a CR
// remains once a final CR and every CRLF are taken out) on every input.
func FuzzBareCR(f *testing.F) {
	for _, tt := range bareCRTests {
		f.Add([]byte(tt.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rest := bytes.ReplaceAll(bytes.TrimSuffix(raw, []byte("\r")), []byte("\r\n"), nil)
		want := bytes.IndexByte(rest, '\r') >= 0
		if got := HasBareCR(raw); got != want {
			t.Fatalf("HasBareCR(%q) = %v, want %v", raw, got, want)
		}
	})
}
