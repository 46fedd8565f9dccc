package origin_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/admin"
)

// exposureRoot holds media beside the debris a deployment leaves under a
// media root: a .env, a git checkout, an .htaccess.
func exposureRoot(t *testing.T, mod func(*origin.Config)) *testServer {
	t.Helper()
	ts := startServer(t, "", mod)
	writeFile(t, ts.root, "hls/ts/master.m3u8", "#EXTM3U\n")
	writeFile(t, ts.root, ".env", "SECRET=1\n")
	writeFile(t, ts.root, ".git/config", "[core]\n")
	writeFile(t, ts.root, "hls/.htaccess", "deny\n")
	writeFile(t, ts.root, ".well-known/security.txt", "Contact: x\n")
	return ts
}

// TestDotfilesNotServed: a segment starting with '.' is 404 however it is
// spelled (percent-encoded, trailing slash, reached through "..").
func TestDotfilesNotServed(t *testing.T) {
	ts := exposureRoot(t, nil)
	c := ts.dial()
	for _, target := range []string{
		"/.env", "/.env/", "/%2eenv", "/.git/config", "/.git/", "/hls/.htaccess",
		"/hls/ts/../.htaccess", "/.well-known/security.txt",
	} {
		r := c.do("GET", target)
		mustStatus(t, r, 404, "GET "+target)
		if strings.Contains(string(r.body), "SECRET") || strings.Contains(string(r.body), "core") {
			t.Errorf("GET %s: body %q leaks the file", target, r.body)
		}
	}
	mustStatus(t, c.do("GET", "/hls/ts/master.m3u8"), 200, "GET a media file beside them")
}

// TestServeDotfiles: -serve-dotfiles serves them (e.g. .well-known).
func TestServeDotfiles(t *testing.T) {
	ts := exposureRoot(t, func(c *origin.Config) { c.ServeDotfiles = true })
	r := ts.get("/.well-known/security.txt")
	mustStatus(t, r, 200, "GET /.well-known/security.txt with ServeDotfiles")
	mustBody(t, r, []byte("Contact: x\n"), "GET /.well-known/security.txt")
}

// TestFileWithTrailingSegments: one file, one URL. A file's name followed
// by a slash or by segments that dot-segment removal (RFC 3986 §5.2.4)
// would fold back onto it is 404, so a CDN cannot be made to cache the
// same file under several keys.
func TestFileWithTrailingSegments(t *testing.T) {
	ts := exposureRoot(t, nil)
	c := ts.dial()
	for _, target := range []string{
		"/hls/ts/master.m3u8/", "/hls/ts/master.m3u8/x/..", "/hls/ts/master.m3u8/.",
		"/hls/ts/master.m3u8%2f", "/hls/ts/master.m3u8/x", "/hls/ts/", "/",
	} {
		mustStatus(t, c.do("GET", target), 404, "GET "+target)
	}
	mustStatus(t, c.do("GET", "/hls/x/../ts/master.m3u8"), 200, "GET with a dot segment before the file name")
}

// TestPublicPrefixWholeSegments: -auth-public /public does not make
// /publicity.txt public.
func TestPublicPrefixWholeSegments(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, prefix := range []string{"/public", "/public/", "public"} {
		t.Run(prefix, func(t *testing.T) {
			ts, _ := authServer(t, now, func(a *origin.AuthConfig) { a.Public = []string{prefix} })
			writeFile(t, ts.root, "publicity.txt", "not public")
			writeFile(t, ts.root, "public2/x.png", "not public")
			c := ts.dial()
			mustStatus(t, c.do("GET", "/public/logo.png"), 200, "GET /public/logo.png")
			mustStatus(t, c.do("GET", "/publicity.txt"), 401, "GET /publicity.txt")
			mustStatus(t, c.do("GET", "/public2/x.png"), 401, "GET /public2/x.png")
		})
	}
}

// TestAdminPprofOff: pprof (whose /cmdline hands out the command line) is
// served on the admin listener only with AdminPprof.
func TestAdminPprofOff(t *testing.T) {
	for _, on := range []bool{false, true} {
		ts := startServer(t, "", func(c *origin.Config) { c.AdminPprof = on })
		admin := httptest.NewServer(admin.Handler(ts.srv, func() bool { return true }))
		t.Cleanup(admin.Close)
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
			resp, err := http.Get(admin.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("AdminPprof=%v: GET %s = %d, want %d", on, p, resp.StatusCode, want)
			}
		}
		resp, err := http.Get(admin.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("AdminPprof=%v: GET /metrics = %d, want 200", on, resp.StatusCode)
		}
	}
}

// TestNegativeCacheBoundedOverTCP: many distinct long missing paths (the
// issue's report: 200 of 500 KB took RSS from 52 to 216 MB) leave the
// cache holding no more than NegativeCacheBytes of names.
func TestNegativeCacheBoundedOverTCP(t *testing.T) {
	const budget = 64 << 10
	ts := startServer(t, "", func(c *origin.Config) {
		c.MaxHeaderBytes = 64 << 10
		c.NegativeCacheBytes = budget
		c.NegativeTTL = time.Hour
	})
	c := ts.dial()
	long := strings.Repeat("abcdefgh/", 16<<10/9) // short segments: os.Root walks them to ENOENT
	for i := range 40 {
		r := c.do("GET", "/missing/"+strings.Repeat("n", i+1)+"/"+long+"seg.ts")
		mustStatus(t, r, 404, "GET a long missing path")
	}
	st := ts.srv.CacheStats()
	if st.NegativeBytes > budget || st.NegativeEntries == 0 {
		t.Errorf("after 40 missing 16 KiB paths: NegativeBytes = %d (entries %d), want 1..%d bytes",
			st.NegativeBytes, st.NegativeEntries, budget)
	}
}

// TestDotfileThroughSymlink: the hidden-segment rule applies to where a
// symlink resolves, not only to the request's name. A link with a plain
// name to .env, or into .git, is 404 like the file itself; a link to
// media is served.
func TestDotfileThroughSymlink(t *testing.T) {
	ts := exposureRoot(t, nil)
	for link, target := range map[string]string{
		"link-to-dotenv.txt": ".env",
		"gitdir":             ".git",
		"hls/up.txt":         "../.env",
		"hls/index.m3u8":     "ts/master.m3u8",
	} {
		if err := os.Symlink(target, filepath.Join(ts.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	c := ts.dial()
	for _, target := range []string{"/link-to-dotenv.txt", "/gitdir/config", "/hls/up.txt"} {
		for range 2 { // the second answer comes from the negative cache
			r := c.do("GET", target)
			mustStatus(t, r, 404, "GET "+target)
			if strings.Contains(string(r.body), "SECRET") || strings.Contains(string(r.body), "core") {
				t.Errorf("GET %s: body %q leaks the file", target, r.body)
			}
		}
	}
	r := c.do("GET", "/hls/index.m3u8")
	mustStatus(t, r, 200, "GET a link to a media file")
	mustBody(t, r, []byte("#EXTM3U\n"), "GET /hls/index.m3u8")
}

// TestServeDotfilesThroughSymlink: with ServeDotfiles, a link to a
// dotfile is served as the dotfile is.
func TestServeDotfilesThroughSymlink(t *testing.T) {
	ts := exposureRoot(t, func(c *origin.Config) { c.ServeDotfiles = true })
	if err := os.Symlink(".well-known/security.txt", filepath.Join(ts.root, "security.txt")); err != nil {
		t.Fatal(err)
	}
	r := ts.get("/security.txt")
	mustStatus(t, r, 200, "GET /security.txt with ServeDotfiles")
	mustBody(t, r, []byte("Contact: x\n"), "GET /security.txt")
}
