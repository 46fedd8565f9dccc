package httpmsg

import (
	"bytes"
	"testing"
)

var requestLineMajorTests = []struct {
	name string
	raw  string
	want byte
	ok   bool
}{
	{"empty", "", 0, false},
	{"HTTP/1.1", "GET / HTTP/1.1\r\nHost: t\r\n\r\n", 1, true},
	{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 2, true},
	{"HTTP/3.0", "GET / HTTP/3.0\r\n", 3, true},
	{"line not complete", "PRI * HTTP/2.0", 0, false},
	{"bare LF", "PRI * HTTP/2.0\n", 0, false},
	{"a CR in the line", "\r HTTP/0.0\r\n", 0, false},
	{"method not a token", "G(T / HTTP/2.0\r\n", 0, false},
	{"two spaces", "GET  / HTTP/2.0\r\n", 0, false},
	{"no version", "GET /\r\n", 0, false},
	{"lower case", "GET / http/2.0\r\n", 0, false},
	{"two digits", "GET / HTTP/10.0\r\n", 0, false},
	{"version only", "HTTP/2.0\r\n", 0, false},
}

func TestRequestLineMajor(t *testing.T) {
	for _, tt := range requestLineMajorTests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := RequestLineMajor([]byte(tt.raw)); got != tt.want || ok != tt.ok {
				t.Errorf("RequestLineMajor(%q) = %d, %v, want %d, %v", tt.raw, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// FuzzRequestLineMajor: a version is reported only when the first line
// ends in " HTTP/<it>.<digit>", and it is a digit.
func FuzzRequestLineMajor(f *testing.F) {
	for _, tt := range requestLineMajorTests {
		f.Add([]byte(tt.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		major, ok := RequestLineMajor(raw)
		if !ok {
			return
		}
		line, _, crlf := bytes.Cut(raw, []byte("\r\n"))
		if !crlf || bytes.IndexByte(line, '\n') >= 0 {
			t.Fatalf("RequestLineMajor(%q) = %d, true for a line that does not end in CRLF", raw, major)
		}
		suffix := []byte(" HTTP/" + string('0'+major) + ".")
		if major > 9 || len(line) < len(suffix)+1 || !bytes.Equal(line[len(line)-len(suffix)-1:len(line)-1], suffix) ||
			!isDigit(line[len(line)-1]) {
			t.Fatalf("RequestLineMajor(%q) = %d, true: the line does not end in HTTP/%d.DIGIT", raw, major, major)
		}
	})
}
