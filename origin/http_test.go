package origin_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"segorigin/fixtures/synth"
	"segorigin/origin"
)

func TestMethods(t *testing.T) { everyMode(t, testMethods) }

func testMethods(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "TRACE"} {
		r := ts.do(m, "/test/digits.txt", "Content-Length: 0")
		mustStatus(t, r, 405, m)
		mustHeader(t, r, "Allow", "GET, HEAD, OPTIONS", m)
	}
}

// TestHeadMatchesGet: RFC 9110 §9.3.2: "The server SHOULD send the same
// header fields in response to a HEAD request as it would have sent if the
// request method had been GET", and no body; Range is ignored for HEAD
// (§14.2: range handling is defined for GET only).
func TestHeadMatchesGet(t *testing.T) { everyMode(t, testHeadMatchesGet) }

func testHeadMatchesGet(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	c := ts.dial()
	get := c.do("GET", "/seg.m4s")
	for _, hdrs := range [][]string{nil, {"Range: bytes=0-1"}} {
		head := c.do("HEAD", "/seg.m4s", hdrs...)
		mustStatus(t, head, 200, "HEAD")
		if len(head.body) != 0 {
			t.Fatalf("HEAD sent a body")
		}
		for _, k := range []string{"Content-Length", "Content-Type", "ETag", "Last-Modified", "Cache-Control", "Accept-Ranges", "Access-Control-Allow-Origin", "Content-Range"} {
			mustHeader(t, head, k, get.header(k), "HEAD "+k)
		}
	}
	// The keep-alive connection is still in sync after the HEADs.
	mustBody(t, c.do("GET", "/test/digits.txt"), []byte("0123456789"), "GET after HEAD")
}

func TestContentTypeAndCacheControl(t *testing.T) { everyMode(t, testContentTypeAndCacheControl) }

func testContentTypeAndCacheControl(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", nil)
	tests := []struct{ file, ctype, cc string }{
		{"v/master.m3u8", "application/vnd.apple.mpegurl", "public, max-age=10"},
		{"v/manifest.mpd", "application/dash+xml", "public, max-age=10"},
		{"v/seg1.ts", "video/mp2t", "public, max-age=31536000, immutable"},
		{"v/seg1.m4s", "video/iso.segment", "public, max-age=31536000, immutable"},
		{"v/init.mp4", "video/mp4", "public, max-age=31536000, immutable"},
		{"v/a.m4v", "video/mp4", "public, max-age=31536000, immutable"},
		{"v/a.cmfv", "video/mp4", "public, max-age=31536000, immutable"},
		{"v/a.m4a", "audio/mp4", "public, max-age=31536000, immutable"},
		{"v/a.cmfa", "audio/mp4", "public, max-age=31536000, immutable"},
		{"v/a.aac", "audio/aac", "public, max-age=31536000, immutable"},
		{"v/subs.vtt", "text/vtt; charset=utf-8", "public, max-age=31536000, immutable"},
		{"v/poster.jpg", "image/jpeg", "public, max-age=31536000, immutable"},
		{"v/thumb.png", "image/png", "public, max-age=31536000, immutable"},
		{"v/UPPER.M3U8", "application/vnd.apple.mpegurl", "public, max-age=10"},
		{"v/blob.xyz", "application/octet-stream", "public, max-age=300"},
		{"v/noext", "application/octet-stream", "public, max-age=300"},
	}
	for _, tt := range tests {
		r := getTyped(t, ts, tt.file, tt.ctype, tt.cc)
		mustHeader(t, r, "Accept-Ranges", "bytes", tt.file)
		if r.header("Date") == "" || r.header("Last-Modified") == "" || r.header("ETag") == "" {
			t.Errorf("%s: Date %q, Last-Modified %q, ETag %q: want all set", tt.file, r.header("Date"), r.header("Last-Modified"), r.header("ETag"))
		}
	}
}

// TestMediaTypes: the built-in table covers CMAF and subtitle tracks and
// what else a VOD origin holds; Config.Types (-mime) adds extensions,
// overrides built-in ones, and its kind picks the Cache-Control class.
// TestCacheControlByKind: -cache-control-playlist, -cache-control-segment
// and -cache-control-other set the Cache-Control of their kinds, as
// nginx's expires or add_header Cache-Control in a location per type
// would; an empty value sends none.
func TestCacheControlByKind(t *testing.T) { everyMode(t, testCacheControlByKind) }

func testCacheControlByKind(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", func(c *origin.Config) {
		c.CacheControlPlaylist = "public, max-age=2"
		c.CacheControlSegment = "public, max-age=86400"
		c.CacheControlOther = "private, max-age=60"
	})
	getTyped(t, ts, "v/index.m3u8", "application/vnd.apple.mpegurl", "public, max-age=2")
	getTyped(t, ts, "v/manifest.mpd", "application/dash+xml", "public, max-age=2")
	getTyped(t, ts, "v/seg1.m4s", "video/iso.segment", "public, max-age=86400")
	getTyped(t, ts, "v/blob.xyz", "application/octet-stream", "private, max-age=60")
	getTyped(t, ts, "v/noext", "application/octet-stream", "private, max-age=60")
	none := mode.start(t, "", func(c *origin.Config) { c.CacheControlOther = "" })
	if r := getTyped(t, none, "v/blob.xyz", "application/octet-stream", ""); len(r.Header.Values("Cache-Control")) != 0 {
		t.Errorf("-cache-control-other empty: Cache-Control %q sent", r.Header.Values("Cache-Control"))
	}
}

func TestMediaTypes(t *testing.T) { everyMode(t, testMediaTypes) }

func testMediaTypes(t *testing.T, mode serverMode) {
	const playlist, segment, other = "public, max-age=10", "public, max-age=31536000, immutable", "public, max-age=300"
	rules := []string{
		".abc=application/x-abc:segment",              // new, with a kind
		".idx=application/x-index",                    // new, no kind: other
		".vtt=text/vtt; charset=utf-8:playlist",       // built in, kind changed
		".key=application/vnd.example.key",            // built in, type changed, kind kept
		".JSON=application/vnd.example+json:playlist", // any case
		".abc=application/x-abc2:segment",             // a later rule wins
	}
	ts := mode.start(t, "", func(c *origin.Config) {
		for _, r := range rules {
			mr, err := origin.ParseMediaTypeRule(r)
			if err != nil {
				t.Fatalf("ParseMediaTypeRule(%q): %v", r, err)
			}
			c.Types = append(c.Types, mr)
		}
	})
	tests := []struct{ file, ctype, cc string }{
		{"v/a.cmfv", "video/mp4", segment},
		{"v/a.cmfa", "audio/mp4", segment},
		{"v/a.cmft", "application/mp4", segment},
		{"v/a.cmfm", "application/mp4", segment},
		{"v/a.webvtt", "text/vtt; charset=utf-8", segment},
		{"v/a.ttml", "application/ttml+xml", segment},
		{"v/a.dfxp", "application/ttml+xml", segment},
		{"v/a.srt", "application/x-subrip", segment},
		{"v/a.mkv", "video/x-matroska", segment},
		{"v/a.ec3", "audio/eac3", segment},
		{"v/a.xml", "application/xml", other},
		{"v/a.abc", "application/x-abc2", segment},
		{"v/a.idx", "application/x-index", other},
		{"v/a.vtt", "text/vtt; charset=utf-8", playlist},
		{"v/a.key", "application/vnd.example.key", other},
		{"v/a.json", "application/vnd.example+json", playlist},
	}
	for _, tt := range tests {
		getTyped(t, ts, tt.file, tt.ctype, tt.cc)
	}
	for _, bad := range []string{"cmfv=video/mp4", ".=video/mp4", ".a.b=video/mp4", ".x=video", ".x=video/mp4:forever", ".x"} {
		if r, err := origin.ParseMediaTypeRule(bad); err == nil {
			t.Errorf("ParseMediaTypeRule(%q) = %+v, want an error", bad, r)
		}
	}
}

// getTyped writes file and checks a GET of it is 200 with Content-Type
// ctype and Cache-Control cc.
func getTyped(t *testing.T, ts *testServer, file, ctype, cc string) *response {
	t.Helper()
	writeFile(t, ts.root, file, "x")
	r := ts.get("/" + file)
	mustStatus(t, r, 200, file)
	mustHeader(t, r, "Content-Type", ctype, file)
	mustHeader(t, r, "Cache-Control", cc, file)
	return r
}

func TestCORS(t *testing.T) { everyMode(t, testCORS) }

func testCORS(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	origin := "Origin: https://player.example"
	for _, tc := range []struct {
		name    string
		method  string
		target  string
		headers []string
		status  int
	}{
		{"200", "GET", "/test/digits.txt", nil, 200},
		{"206", "GET", "/test/digits.txt", []string{"Range: bytes=0-1"}, 206},
		{"304", "GET", "/test/digits.txt", []string{"If-None-Match: *"}, 304},
		{"404", "GET", "/nope.ts", nil, 404},
		{"416", "GET", "/test/digits.txt", []string{"Range: bytes=99-"}, 416},
		{"405", "POST", "/test/digits.txt", []string{"Content-Length: 0"}, 405},
	} {
		r := ts.do(tc.method, tc.target, append(tc.headers, origin)...)
		mustStatus(t, r, tc.status, tc.name)
		mustHeader(t, r, "Access-Control-Allow-Origin", "*", tc.name)
		mustHeader(t, r, "Access-Control-Expose-Headers", "Content-Length, Content-Range, Content-Type, ETag, Last-Modified, Accept-Ranges, Date", tc.name)
		mustHeader(t, r, "Timing-Allow-Origin", "*", tc.name)
		mustHeader(t, r, "X-Content-Type-Options", "nosniff", tc.name)
	}
	// Preflight for a multi-range request with If-Range.
	r := ts.do("OPTIONS", "/test/digits.txt", origin, "Access-Control-Request-Method: GET", "Access-Control-Request-Headers: range, if-range")
	mustStatus(t, r, 204, "preflight")
	mustHeader(t, r, "Access-Control-Allow-Origin", "*", "preflight")
	mustHeader(t, r, "Access-Control-Allow-Methods", "GET, HEAD, OPTIONS", "preflight")
	mustHeader(t, r, "Access-Control-Allow-Headers", "Range, If-Range, If-None-Match, If-Modified-Since, If-Match, If-Unmodified-Since, Authorization, CMCD-Request, CMCD-Object, CMCD-Session, CMCD-Status", "preflight")
	mustHeader(t, r, "Access-Control-Max-Age", "86400", "preflight")
}

func TestCORSAllowList(t *testing.T) { everyMode(t, testCORSAllowList) }

func testCORSAllowList(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", func(c *origin.Config) { c.CORSOrigins = []string{"https://a.example", "https://b.example"} })
	writeFile(t, ts.root, "x.m3u8", "#EXTM3U\n")
	r := ts.get("/x.m3u8", "Origin: https://b.example")
	mustHeader(t, r, "Access-Control-Allow-Origin", "https://b.example", "allowed origin")
	mustHeader(t, r, "Vary", "Origin", "allowed origin")
	r = ts.get("/x.m3u8", "Origin: https://evil.example")
	mustHeader(t, r, "Access-Control-Allow-Origin", "", "other origin")
	mustHeader(t, r, "Vary", "Origin", "other origin")
}

// TestPaths: percent-decoding, dot segments, duplicate slashes; nothing
// outside the root, ever; no directory listings.
func TestPaths(t *testing.T) { everyMode(t, testPaths) }

func testPaths(t *testing.T, mode serverMode) {
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "secret")
	ts := mode.rangeRoot(t)
	writeFile(t, ts.root, "with space.m4s", "spaced")
	writeFile(t, ts.root, "tête/épisode 1.ts", "utf8")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ts.root, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ts.root, "leakdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("test/digits.txt", filepath.Join(ts.root, "inside.txt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target string
		status int
		body   string
	}{
		{"/test/digits.txt", 200, "0123456789"},
		{"//test///digits.txt", 200, "0123456789"},
		{"/test/./digits.txt", 200, "0123456789"},
		{"/x/../test/digits.txt", 200, "0123456789"},
		{"/x/%2e%2e/test/digits.txt", 200, "0123456789"},
		{"/test%2fdigits.txt", 200, "0123456789"},
		{"/test/digits.txt?v=1&x=..%2f", 200, "0123456789"},
		{"/%74est/digits.txt", 200, "0123456789"},
		{"/with%20space.m4s", 200, "spaced"},
		{"/t%C3%AAte/%C3%A9pisode%201.ts", 200, "utf8"},
		{"/inside.txt", 200, "0123456789"},
		{"/../etc/passwd", 400, ""},
		{"/%2e%2e/etc/passwd", 400, ""},
		{"/%2E%2E%2Fetc%2Fpasswd", 400, ""},
		{"/test/../../etc/passwd", 400, ""},
		{"/..%2f..%2fetc/passwd", 400, ""},
		{"/test/digits.txt%00.m4s", 400, ""},
		{"/test/%0adigits.txt", 400, ""},
		{"/test/%zz", 400, ""},
		{"/test/%4", 400, ""},
		{"/leak.txt", 404, ""},
		{"/leakdir/secret.txt", 404, ""},
		{"/", 404, ""},
		{"/test", 404, ""},
		{"/test/", 404, ""},
		{"/missing.ts", 404, ""},
		{"/test/digits.txt/more", 404, ""},
	}
	c := ts.dial()
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r := c.do("GET", tt.target)
			mustStatus(t, r, tt.status, "GET "+tt.target)
			if tt.status == 200 {
				mustBody(t, r, []byte(tt.body), "GET "+tt.target)
			} else if string(r.body) == "secret" {
				t.Fatalf("GET %s leaked a file outside the root", tt.target)
			}
		})
	}
	r := ts.get("http://test/test/digits.txt") // absolute-form request target
	mustStatus(t, r, 200, "absolute-form")
}

func TestFollowSymlinks(t *testing.T) { everyMode(t, testFollowSymlinks) }

func testFollowSymlinks(t *testing.T, mode serverMode) {
	outside := t.TempDir()
	writeFile(t, outside, "shared.ts", "shared")
	ts := mode.start(t, "", func(c *origin.Config) { c.FollowSymlinks = true })
	if err := os.Symlink(filepath.Join(outside, "shared.ts"), filepath.Join(ts.root, "shared.ts")); err != nil {
		t.Fatal(err)
	}
	r := ts.get("/shared.ts")
	mustStatus(t, r, 200, "symlink out with -follow-symlinks")
	mustBody(t, r, []byte("shared"), "symlink out with -follow-symlinks")
	mustStatus(t, ts.get("/../x"), 400, "dot-dot with -follow-symlinks")
}

// TestLargeSparseFile: offsets past 4 GiB, on a sparse file whose tail holds
// synth bytes.
func TestLargeSparseFile(t *testing.T) { everyMode(t, testLargeSparseFile) }

func testLargeSparseFile(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", nil)
	const size = 5<<30 + 12345
	const tailOff = size - 1<<20
	p := filepath.Join(ts.root, "big.mp4")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	tail := make([]byte, 1<<20)
	synth.Fill("big.mp4", tailOff, tail)
	if _, err := f.WriteAt(tail, tailOff); err != nil {
		t.Fatal(err)
	}
	f.Close()

	c := ts.dial()
	head := c.do("HEAD", "/big.mp4")
	mustHeader(t, head, "Content-Length", fmt.Sprint(size), "HEAD 5 GiB")
	r := c.do("GET", "/big.mp4", "Range: bytes=5368700000-5368700099")
	mustStatus(t, r, 206, "range past 4 GiB")
	mustHeader(t, r, "Content-Range", fmt.Sprintf("bytes 5368700000-5368700099/%d", size), "range past 4 GiB")
	mustBody(t, r, synthBytes("big.mp4", 5368700000, 100), "range past 4 GiB")
	r = c.do("GET", "/big.mp4", "Range: bytes=-10")
	mustBody(t, r, synthBytes("big.mp4", size-10, 10), "suffix of 5 GiB")
	r = c.do("GET", "/big.mp4", "Range: bytes=4294967290-4294967300")
	mustBody(t, r, make([]byte, 11), "span across 4 GiB (sparse zeros)")
}

// TestPipelinedKeepAlive: requests written back to back before any response
// is read: single, suffix, open-ended, multi-range, HEAD and a 304, then
// each response is checked in order, byte for byte.
func TestPipelinedKeepAlive(t *testing.T) { everyMode(t, testPipelinedKeepAlive) }

func testPipelinedKeepAlive(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	c := ts.dial()
	etag := c.do("HEAD", "/seg.m4s").header("ETag")
	type req struct {
		method string
		hdrs   []string
		status int
		body   []byte
	}
	reqs := []req{
		{"GET", nil, 200, synthBytes("seg.m4s", 0, 100_000)},
		{"GET", []string{"Range: bytes=10-19"}, 206, synthBytes("seg.m4s", 10, 10)},
		{"GET", []string{"Range: bytes=-100"}, 206, synthBytes("seg.m4s", 99_900, 100)},
		{"HEAD", nil, 200, nil},
		{"GET", []string{"Range: bytes=99000-"}, 206, synthBytes("seg.m4s", 99_000, 1000)},
		{"GET", []string{"Range: bytes=0-1,3-4"}, 206, nil},
		{"GET", []string{"If-None-Match: " + etag}, 304, nil},
		{"GET", []string{"Range: bytes=0-0"}, 206, synthBytes("seg.m4s", 0, 1)},
	}
	var all bytes.Buffer
	for _, r := range reqs {
		fmt.Fprintf(&all, "%s /seg.m4s HTTP/1.1\r\nHost: t\r\n%s\r\n", r.method, joinHeaders(r.hdrs))
	}
	if _, err := c.conn.Write(all.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		got := c.read(r.method)
		what := fmt.Sprintf("pipelined #%d %s %v", i, r.method, r.hdrs)
		mustStatus(t, got, r.status, what)
		if r.body != nil {
			mustBody(t, got, r.body, what)
		}
	}
}

func joinHeaders(h []string) string {
	var b strings.Builder
	for _, s := range h {
		b.WriteString(s + "\r\n")
	}
	return b.String()
}
