package origin_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/origin"
)

// inlineServers serves root twice: inlined (every file up to 1 MiB in
// memory) and not (-inline-max 0, so header + sendfile).
func inlineServers(t *testing.T, root string) (inline, sendfile *testServer) {
	inline = startServer(t, root, func(c *origin.Config) { c.InlineMax = 1 << 20 })
	sendfile = startServer(t, root, func(c *origin.Config) { c.InlineMax = 0 })
	return inline, sendfile
}

// TestInlineMatchesSendfile: every answer the inline path gives is the one
// the sendfile path gives, header for header and byte for byte (multipart
// boundaries aside, which are random per response), and the inline server
// counted its bodies under path "inline".
func TestInlineMatchesSendfile(t *testing.T) {
	root := t.TempDir()
	p := writeSynth(t, root, "seg.m4s", 60_000)
	// Dated an hour ago: a file written this second has the Date of each
	// answer as its Last-Modified (RFC 9110 §8.8.2.1), and the two servers'
	// answers may fall in different seconds.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	in, sf := inlineServers(t, root)
	etag := in.get("/seg.m4s").header("ETag")
	tests := []struct {
		name    string
		method  string
		headers []string
		status  int
	}{
		{"whole file", "GET", nil, 200},
		{"single range", "GET", []string{"Range: bytes=100-199"}, 206},
		{"suffix range", "GET", []string{"Range: bytes=-10"}, 206},
		{"Safari probe (RFC 9110 §14.1.2)", "GET", []string{"Range: bytes=0-1"}, 206},
		{"multipart", "GET", []string{"Range: bytes=0-9,30000-30009,-5"}, 206},
		{"If-Range holds", "GET", []string{"Range: bytes=5-9", "If-Range: " + etag}, 206},
		{"If-Range fails: whole file (RFC 9110 §13.1.5)", "GET", []string{"Range: bytes=5-9", `If-Range: "other"`}, 200},
		{"HEAD", "HEAD", nil, 200},
		{"If-None-Match (RFC 9110 §13.1.2)", "GET", []string{"If-None-Match: " + etag}, 304},
		{"If-Match fails (RFC 9110 §13.1.1)", "GET", []string{`If-Match: "other"`}, 412},
		{"unsatisfiable (RFC 9110 §15.5.17)", "GET", []string{"Range: bytes=70000-"}, 416},
	}
	ci, cs := in.dial(), sf.dial()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := ci.do(tt.method, "/seg.m4s", tt.headers...), cs.do(tt.method, "/seg.m4s", tt.headers...)
			mustStatus(t, a, tt.status, "inline "+tt.name)
			mustStatus(t, b, tt.status, "sendfile "+tt.name)
			ab, bb := a.body, b.body
			if ba, bs := boundaryOf(a.header("Content-Type")), boundaryOf(b.header("Content-Type")); ba != "" {
				ab, bb = bytes.ReplaceAll(ab, []byte(ba), []byte("B")), bytes.ReplaceAll(bb, []byte(bs), []byte("B"))
			}
			if !bytes.Equal(ab, bb) {
				t.Errorf("%s: inline body (%d bytes) differs from sendfile body (%d bytes) at %d", tt.name, len(ab), len(bb), firstDiff(ab, bb))
			}
			for _, k := range []string{"Content-Length", "Content-Range", "ETag", "Last-Modified", "Cache-Control", "Accept-Ranges"} {
				if a.header(k) != b.header(k) {
					t.Errorf("%s: inline %s = %q, sendfile %q", tt.name, k, a.header(k), b.header(k))
				}
			}
		})
	}
	tr := func() origin.TransportStats { return in.srv.Stats().Transport }
	waitFor(t, 2*time.Second, "inline bodies counted", func() bool { return tr().InlineResponses >= 7 })
	if n := tr().SendfileResponses + tr().CopyResponses; n != 0 {
		t.Errorf("inline server sent %d bodies by sendfile or copy, want 0", n)
	}
	if n := sf.srv.Stats().Transport.InlineResponses; n != 0 {
		t.Errorf("-inline-max 0 server sent %d inline bodies, want 0", n)
	}
}

// TestInlinePipelined: a client pipelines enough 304s that fasthttp's
// write buffer fills while the next inline response's header is written
// (it flushes a full buffer mid-header); the inline body must still follow
// its own header, never land inside it.
func TestInlinePipelined(t *testing.T) {
	root := t.TempDir()
	writeSynth(t, root, "p.m3u8", 1000)
	writeSynth(t, root, "s.m4s", 30_000)
	in := startServer(t, root, func(c *origin.Config) { c.InlineMax = 64 << 10 })
	c := in.dial()
	etag := c.do("GET", "/p.m3u8").header("ETag")
	var all bytes.Buffer
	type want struct {
		status int
		body   []byte
	}
	var wants []want
	for g := range 16 {
		// 13 to 28 304s of about 250 bytes each fill the 4096-byte
		// buffer at a different point of the next header each time.
		for i := range 13 + g {
			fmt.Fprintf(&all, "GET /p.m3u8?%d HTTP/1.1\r\nHost: t\r\nIf-None-Match: %s\r\n\r\n", i, etag)
			wants = append(wants, want{304, nil})
		}
		target := []string{"/p.m3u8", "/s.m4s"}[g%2]
		fmt.Fprintf(&all, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", target)
		size := map[string]int64{"/p.m3u8": 1000, "/s.m4s": 30_000}[target]
		wants = append(wants, want{200, synthBytes(target[1:], 0, size)})
	}
	if _, err := c.conn.Write(all.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i, w := range wants {
		r := c.read("GET")
		what := fmt.Sprintf("pipelined #%d", i)
		mustStatus(t, r, w.status, what)
		if w.body != nil {
			mustBody(t, r, w.body, what)
		}
	}
}

// TestInlineRenameReplace: a playlist replaced by atomic rename hundreds of
// times a second while clients fetch it over keep-alive connections: every
// body is wholly one version (ARCHITECTURE.md: "wholly old or wholly
// new"); a client never gets a version older than one it got before (an
// inlined copy replaced is never served again); and once the renames
// stop, the last version is what every request gets. (How soon after a
// rename is the watcher's latency, which a loaded machine stretches:
// TestReplaceByRenameUnderLoad bounds it, not this test.)
func TestInlineRenameReplace(t *testing.T) {
	root := t.TempDir()
	ts := startServer(t, root, nil)
	p := filepath.Join(root, "live", "index.m3u8")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	publish := func(v int) {
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, playlistVersion(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	publish(0)
	stop := time.Now().Add(1500 * time.Millisecond)
	var bodies, backwards atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c := ts.dial()
			seen := -1 // the newest version this client got
			for time.Now().Before(stop) {
				r := c.do("GET", "/live/index.m3u8")
				v, ok := parseVersion(r.body)
				if r.StatusCode != 200 || !ok {
					t.Errorf("status %d, body of %d bytes is not one whole version: %q", r.StatusCode, len(r.body), trunc(r.body))
					return
				}
				bodies.Add(1)
				if v < seen {
					backwards.Add(1)
				}
				seen = max(seen, v)
			}
		})
	}
	versions := 0
	for v := 1; time.Now().Before(stop); v++ {
		publish(v)
		versions = v
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("%d versions published, %d bodies fetched, inline bodies %d", versions, bodies.Load(), ts.srv.Stats().Transport.InlineResponses)
	if n := backwards.Load(); n > 0 {
		t.Errorf("%d answers were older than one their client had got before", n)
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("version %d, the last published, served", versions), func() bool {
		v, ok := parseVersion(ts.get("/live/index.m3u8").body)
		return ok && v == versions
	})
	if ts.srv.Stats().Transport.InlineResponses == 0 {
		t.Errorf("no body was served inline")
	}
}

// playlistVersion is version v of a live playlist, 1-2 KiB long: every line
// names v, so a body mixing two versions shows it.
func playlistVersion(v int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:%d\n", v)
	for i := range 20 + v%20 {
		fmt.Fprintf(&b, "#EXTINF:2.0,\nseg-%d-%d.m4s\n", v, i)
	}
	fmt.Fprintf(&b, "#END %d\n", v)
	return b.Bytes()
}

// parseVersion returns the version a body is, if it is exactly one.
func parseVersion(body []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(body, []byte("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:"))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, '\n')
	if end < 0 {
		return 0, false
	}
	v, err := strconv.Atoi(string(rest[:end]))
	return v, err == nil && bytes.Equal(body, playlistVersion(v))
}

// TestInlineInPlaceWrite: a small file rewritten in place (same inode) is
// served new within the freshness bound, by the watcher's modify event or,
// with the watcher off, by stat revalidation (within -revalidate-every).
func TestInlineInPlaceWrite(t *testing.T) {
	for _, tt := range []struct {
		name  string
		watch bool
		bound time.Duration
	}{
		{"watcher event", true, freshness},
		{"stat revalidation", false, 100*time.Millisecond + freshness},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, "", func(c *origin.Config) {
				c.Watch, c.RevalidateEvery = tt.watch, 100*time.Millisecond
			})
			p := writeFile(t, ts.root, "v/p.m3u8", string(playlistVersion(1)))
			c := ts.dial()
			mustBody(t, c.do("GET", "/v/p.m3u8"), playlistVersion(1), "before the write")
			for v := 2; v <= 4; v++ {
				// os.WriteFile truncates and writes the same inode.
				if err := os.WriteFile(p, playlistVersion(v), 0o644); err != nil {
					t.Fatal(err)
				}
				waitFor(t, tt.bound, fmt.Sprintf("version %d served", v), func() bool {
					got, ok := parseVersion(c.do("GET", "/v/p.m3u8").body)
					return ok && got == v
				})
			}
			if ts.srv.Stats().Transport.InlineResponses == 0 {
				t.Errorf("no body was served inline")
			}
		})
	}
}
