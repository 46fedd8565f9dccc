package origin

import (
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		raw, want string
		err       error
	}{
		{"/", "", errDirPath},
		{"/a/b.ts", "a/b.ts", nil},
		{"//a///b.ts", "a/b.ts", nil},
		{"/a/./b.ts", "a/b.ts", nil},
		{"/a/../b.ts", "b.ts", nil},
		{"/a/%2e%2e/b.ts", "b.ts", nil},
		{"/a%2fb.ts", "a/b.ts", nil},
		{"/a/b/", "", errDirPath},
		{"/a/b.m3u8/x/..", "", errDirPath},
		{"/a/b.m3u8/.", "", errDirPath},
		{"/a/b.m3u8%2f", "", errDirPath},
		{"/a/x/../b.m3u8", "a/b.m3u8", nil},
		{"/.env", ".env", nil}, // hidden, refused by the handler unless ServeDotfiles
		{"/%C3%A9t%C3%A9.ts", "été.ts", nil},
		{"/a%20b.ts", "a b.ts", nil},
		{"/..", "", errPathEscapes},
		{"/a/../..", "", errPathEscapes},
		{"/%2e%2e%2fetc", "", errPathEscapes},
		{"/a%00.ts", "", errBadPath},
		{"/a%0d%0a.ts", "", errBadPath},
		{"/a%7f", "", errBadPath},
		{"/a%", "", errBadPath},
		{"/a%g1", "", errBadPath},
		{"a.ts", "", errBadPath},
		{"", "", errBadPath},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			var scratch [8]byte
			got, err := cleanPath(scratch[:0], []byte(tt.raw))
			if got != tt.want || err != tt.err {
				t.Errorf("cleanPath(%q) = %q, %v; want %q, %v", tt.raw, got, err, tt.want, tt.err)
			}
		})
	}
}

// FuzzCleanPath: whatever the input, a path that comes out names something
// inside the root: no leading slash, no empty, "." or ".." segment, no
// control byte.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/a/../b", "/%2e%2e/x", "//a//b/", "/a%2f..%2f..", "/%00", "/ok/seg1.ts", "ok/seg1.ts", "a/../b", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// cleanName, read-ahead's check of a predicted name, accepts
		// only names a request could have (cleaning one is a no-op).
		if cleanName(raw) && !strings.Contains(raw, "%") {
			if again, err := cleanPath(nil, []byte("/"+raw)); err != nil || again != raw {
				t.Fatalf("cleanName(%q) = true, but cleanPath(/%s) = %q, %v", raw, raw, again, err)
			}
		}
		got, err := cleanPath(nil, []byte(raw))
		if err != nil {
			return
		}
		if got == "" {
			return
		}
		if strings.HasPrefix(got, "/") || strings.HasSuffix(got, "/") {
			t.Fatalf("cleanPath(%q) = %q: leading or trailing slash", raw, got)
		}
		for _, seg := range strings.Split(got, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("cleanPath(%q) = %q: segment %q", raw, got, seg)
			}
		}
		for _, c := range []byte(got) {
			if c < 0x20 || c == 0x7f {
				t.Fatalf("cleanPath(%q) = %q: control byte %#x", raw, got, c)
			}
		}
		// And it accepts every name a request can have.
		if !cleanName(got) {
			t.Fatalf("cleanName(cleanPath(%q) = %q) = false, want true", raw, got)
		}
		// A file opened by its cleaned name with no symlink on the way
		// is hidden exactly when the name is.
		if h, want := hiddenTarget("/srv/media", "/srv/media/"+got), hiddenSegment(got); h != want {
			t.Fatalf("hiddenTarget(/srv/media, /srv/media/%s) = %v, hiddenSegment = %v", got, h, want)
		}
	})
}

func TestHiddenSegment(t *testing.T) {
	for name, want := range map[string]bool{
		".env": true, ".git/config": true, "a/.htaccess": true, "a/.b/c.ts": true,
		"a/b.ts": false, "a/b..ts": false, "a.b/c.ts": false, "": false,
	} {
		if got := hiddenSegment(name); got != want {
			t.Errorf("hiddenSegment(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHiddenTarget(t *testing.T) {
	const root = "/srv/media"
	tests := []struct {
		name, real string
		want       bool
	}{
		{"media", "/srv/media/hls/a.ts", false},
		{"dotfile", "/srv/media/.env", true},
		{"in a dot-directory", "/srv/media/.git/config", true},
		{"dot inside a name", "/srv/media/a..b/c.ts", false},
		{"the root itself", "/srv/media", false},
		{"outside, plain", "/mnt/store/a.ts", false},
		{"outside, hidden", "/home/u/.ssh/id_ed25519", true},
		{"sibling with a shared prefix", "/srv/media2/.env", true},
		{"parent", "/srv", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hiddenTarget(root, tt.real); got != tt.want {
				t.Errorf("hiddenTarget(%q, %q) = %v, want %v", root, tt.real, got, tt.want)
			}
		})
	}
}

func TestCleanPathAllocs(t *testing.T) {
	raw := []byte("/vod/title42/v1/seg00042.m4s")
	allocs := testing.AllocsPerRun(100, func() {
		var scratch [256]byte
		if _, err := cleanPath(scratch[:0], raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("cleanPath allocs = %v, want <= 1 (the returned string)", allocs)
	}
}
