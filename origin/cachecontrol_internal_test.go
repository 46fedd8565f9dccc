package origin

import "testing"

func TestCapCacheControl(t *testing.T) {
	tests := []struct {
		cc        string
		remaining int64
		private   bool
		want      string
	}{
		{"public, max-age=31536000, immutable", 60, false, "public, max-age=60"},
		{"public, max-age=10", 60, false, "public, max-age=10"},
		{"public, max-age=300, s-maxage=3600", 60, false, "public, max-age=60, s-maxage=60"},
		{"public, max-age=30, s-maxage=20", 60, false, "public, max-age=30, s-maxage=20"},
		{"max-age=10, stale-while-revalidate=60, stale-if-error=600", 60, false, "max-age=10"},
		{"public", 60, false, "public, max-age=60"},
		{"", 60, false, "max-age=60"},
		{"no-store", 60, false, "no-store"},
		{"no-cache", 60, false, "no-cache"},
		{"public, Max-Age=99999", 60, false, "public, Max-Age=60"},
		{"public, max-age=x", 60, false, "public, max-age=60"},
		{"public, max-age=31536000, immutable", -5, false, "public, max-age=0"},
		{"public, max-age=31536000, immutable", 60, true, "private, max-age=60"},
		{"public, max-age=300, s-maxage=3600, must-revalidate", 60, true, "private, max-age=60, must-revalidate"},
		{"private, max-age=5", 60, true, "private, max-age=5"},
	}
	for _, tt := range tests {
		if got := string(capCacheControl(nil, []byte(tt.cc), tt.remaining, tt.private)); got != tt.want {
			t.Errorf("capCacheControl(%q, %d, private=%v) = %q, want %q", tt.cc, tt.remaining, tt.private, got, tt.want)
		}
	}
}

func TestErrorCacheControlByStatus(t *testing.T) {
	e := newErrorCacheControl(DefaultConfig())
	for code, want := range map[int]string{404: "max-age=10", 410: "max-age=10", 401: "no-store", 403: "no-store",
		416: "no-store", 400: "no-store", 412: "no-store", 431: "no-store", 500: "no-store", 503: "no-store"} {
		if got := string(e.forStatus(code)); got != want {
			t.Errorf("forStatus(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestCapCacheControlAllocs(t *testing.T) {
	cc := []byte("public, max-age=31536000, immutable")
	allocs := testing.AllocsPerRun(100, func() {
		var buf [160]byte
		capCacheControl(buf[:0], cc, 60, false)
	})
	if allocs > 0 {
		t.Errorf("capCacheControl allocs = %v, want 0", allocs)
	}
}
