package etag

import (
	"bytes"
	"strings"
	"testing"
)

func TestSum(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 100_000)
	whole, err := Sum(bytes.NewReader(data), int64(len(data)), make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	small, err := Sum(bytes.NewReader(data), int64(len(data)), make([]byte, 7))
	if err != nil {
		t.Fatal(err)
	}
	if whole != small {
		t.Errorf("Sum with a 1 MiB buffer = %s, with 7 bytes = %s: the buffer must not matter", whole, small)
	}
	other := bytes.Clone(data)
	other[len(other)-1] ^= 1
	if o, _ := Sum(bytes.NewReader(other), int64(len(other)), make([]byte, 4096)); o == whole {
		t.Errorf("one flipped bit gives the same tag %s", o)
	}
	if _, err := Sum(bytes.NewReader(data[:100]), 200, make([]byte, 64)); err == nil {
		t.Errorf("Sum of a file shorter than its size: nil error, want ErrChanged")
	}
	if len(whole) != 34 || whole[0] != '"' || whole[33] != '"' {
		t.Errorf("tag %s, want a quoted 32-digit hex", whole)
	}
}

func TestAttrFor(t *testing.T) {
	tag := Tag{ETag: `"0123456789abcdef0123456789abcdef"`, Changed: 1_000}
	v := Version{Size: 10, ModTime: 500, Ctime: 1_000}
	setAt := int64(5_000_000_000)
	s, err := ParseAttr(FormatAttr(v, tag, setAt))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		v    Version
		ok   bool
	}{
		{"as hashed", v, true},
		{"ctime of the attribute's write", Version{Size: 10, ModTime: 500, Ctime: setAt + 3e6}, true},
		{"coarse ctime a tick early", Version{Size: 10, ModTime: 500, Ctime: setAt - 8e6}, true},
		{"changed later, mtime restored", Version{Size: 10, ModTime: 500, Ctime: setAt + 1e9}, false},
		{"other size", Version{Size: 11, ModTime: 500, Ctime: 1_000}, false},
		{"other mtime", Version{Size: 10, ModTime: 501, Ctime: 1_000}, false},
		{"ctime before the hash", Version{Size: 10, ModTime: 500, Ctime: 999}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.For(tt.v)
			if ok != tt.ok || (ok && got != tag) {
				t.Errorf("For(%+v) = %+v, %v; want %+v, %v", tt.v, got, ok, tag, tt.ok)
			}
		})
	}
}

func TestParseAttrRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"2 10 500 1000 5 \"0123456789abcdef0123456789abcdef\"",
		"1 10 500 1000 \"0123456789abcdef0123456789abcdef\"",
		"1 x 500 1000 5 \"0123456789abcdef0123456789abcdef\"",
		"1 10 500 1000 5 \"0123456789abcdef0123456789abcdeg\"",
		"1 10 500 1000 5 0123456789abcdef0123456789abcdef00",
	} {
		if s, err := ParseAttr([]byte(in)); err == nil {
			t.Errorf("ParseAttr(%q) = %+v, want an error", in, s)
		}
	}
}

// FuzzParseAttr: any bytes parse or are refused without panic; what
// parses formats back to an attribute that parses to the same value.
func FuzzParseAttr(f *testing.F) {
	f.Add([]byte(`1 10 500 1000 5000 "0123456789abcdef0123456789abcdef"`))
	f.Add([]byte(`1 -1 -9223372036854775808 0 9223372036854775807 "ffffffffffffffffffffffffffffffff"`))
	f.Add([]byte("1  10\t500 1000 5000 \"00000000000000000000000000000000\"\n"))
	f.Add([]byte(strings.Repeat("1 ", 40)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseAttr(b)
		if err != nil {
			return
		}
		again, err := ParseAttr(FormatAttr(Version{Size: s.Size, ModTime: s.ModTime}, Tag{ETag: s.ETag, Changed: s.Changed}, s.SetAt))
		if err != nil || again != s {
			t.Fatalf("ParseAttr(%q) = %+v; formatted and parsed again: %+v, %v", b, s, again, err)
		}
	})
}
