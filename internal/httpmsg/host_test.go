package httpmsg

import (
	"bytes"
	"testing"
)

var hostTests = []struct {
	host string
	want bool
}{
	{"example.com", true},
	{"example.com:8080", true},
	{"127.0.0.1", true},
	{"127.0.0.1:80", true},
	{"[::1]", true},
	{"[::1]:443", true},
	{"[v1.fe]", true},
	{"", true},                  // RFC 9112 §3.2: empty when the target has no authority
	{"x:", true},                // RFC 3986 §3.2.3: port = *DIGIT
	{"a%20b", true},             // pct-encoded
	{"\xff", false},             // not a reg-name character
	{"u@b", false},              // userinfo is no part of Host
	{"x:99999", false},          // no such TCP port
	{"x:8o", false},             // not digits
	{"a b", false},              // space
	{"[::1", false},             // unclosed IP-literal
	{"[::1]x", false},           // junk after it
	{"[fe80::1%25eth0]", false}, // a zone is no part of RFC 3986
	{"[1.2.3.4]", false},        // IPv4 inside brackets
	{"a/b", false},
}

func TestValidHost(t *testing.T) {
	for _, tt := range hostTests {
		if got := ValidHost([]byte(tt.host)); got != tt.want {
			t.Errorf("ValidHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func TestAbsoluteAuthority(t *testing.T) {
	tests := []struct {
		target, authority string
		abs, valid        bool
	}{
		{"/a.txt", "", false, false},
		{"*", "", false, false},
		{"http://x/a.txt", "x", true, true},
		{"HTTP://x:80?q", "x:80", true, true},
		{"http:///a.txt", "", true, false},
		{"http://u@x/a.txt", "u@x", true, false},
		{"http://:80/", ":80", true, false},
		{"/a?u=http://x", "", false, false},
	}
	for _, tt := range tests {
		a, abs := AbsoluteAuthority([]byte(tt.target))
		if string(a) != tt.authority || abs != tt.abs {
			t.Errorf("AbsoluteAuthority(%q) = %q, %v, want %q, %v", tt.target, a, abs, tt.authority, tt.abs)
		}
		if abs && ValidAuthority(a) != tt.valid {
			t.Errorf("ValidAuthority(%q) = %v, want %v", a, !tt.valid, tt.valid)
		}
	}
}

func TestFieldValue(t *testing.T) {
	raw := []byte("Host: t\r\ntransfer-encoding:  identity \r\nX: y\r\n")
	if v, ok := FieldValue(raw, "Transfer-Encoding"); !ok || string(v) != "identity" {
		t.Errorf("FieldValue(Transfer-Encoding) = %q, %v, want identity", v, ok)
	}
	if v, ok := FieldValue(raw, "Transfer"); ok {
		t.Errorf("FieldValue(Transfer) = %q, true, want none", v)
	}
}

// FuzzValidHost: a Host ValidHost takes is one net/url would take as a
// host, and never holds a character that could end or split the field.
func FuzzValidHost(f *testing.F) {
	for _, tt := range hostTests {
		f.Add([]byte(tt.host))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !ValidHost(b) {
			return
		}
		for _, c := range b {
			if c <= ' ' || c >= 0x7f || c == '@' || c == '/' || c == '?' || c == '#' || c == '"' {
				t.Fatalf("ValidHost(%q) = true with %q in it", b, c)
			}
		}
	})
}

func TestFieldList(t *testing.T) {
	raw := []byte("Host: t\r\nTransfer-Encoding: gzip \r\nX: y\r\ntransfer-encoding: chunked\r\n")
	if got := string(FieldList(raw, "Transfer-Encoding")); got != "gzip, chunked" {
		t.Errorf("FieldList(Transfer-Encoding) = %q, want %q", got, "gzip, chunked")
	}
	if got := FieldList(raw, "Range"); got != nil {
		t.Errorf("FieldList(Range) = %q, want nil", got)
	}
}

func TestMaskField(t *testing.T) {
	raw := []byte("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nX-Transfer-Encoding: a\r\ntransfer-encoding: chunked\r\nTransfer-Encoding : x\r\n\r\n")
	got, found := MaskField(raw, "Transfer-Encoding")
	want := "POST / HTTP/1.1\r\nXransfer-Encoding: gzip\r\nX-Transfer-Encoding: a\r\nXransfer-encoding: chunked\r\nTransfer-Encoding : x\r\n\r\n"
	if string(got) != want || !found {
		t.Errorf("MaskField = %q, %v; want %q, true", got, found, want)
	}
	if string(raw) == want {
		t.Error("MaskField changed its input")
	}
	if got, found := MaskField(raw, "Range"); found || string(got) != string(raw) {
		t.Errorf("MaskField(Range) = %q, %v; want the input, false", got, found)
	}
}

// FuzzMaskField: MaskField never changes its input or a length, changes
// only the first byte of lines, and leaves no line FieldList would read
// for the field.
func FuzzMaskField(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\ntransfer-encoding:chunked\r\n\r\n"))
	f.Add([]byte("Transfer-Encoding:\nTransfer-Encoding"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		in := bytes.Clone(raw)
		got, found := MaskField(raw, "Transfer-Encoding")
		if !bytes.Equal(raw, in) || len(got) != len(raw) {
			t.Fatalf("MaskField(%q) = %q: input changed or length %d", in, got, len(got))
		}
		for i := range got {
			if got[i] != raw[i] && (got[i] != 'X' || (i > 0 && raw[i-1] != '\n')) {
				t.Fatalf("MaskField(%q) = %q: byte %d changed, not a line's first to X", raw, got, i)
			}
		}
		if FieldList(got, "Transfer-Encoding") != nil || found == bytes.Equal(got, raw) {
			t.Fatalf("MaskField(%q) = %q, %v: a field line is left, or found is wrong", raw, got, found)
		}
	})
}
