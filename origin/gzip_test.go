package origin_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
)

// gzipManifest is a DASH manifest larger than -inline-max (16 KiB), so
// the server reads it to compress it.
func gzipManifest() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>` + "\n" + `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><Period><AdaptationSet><Representation id="v" bandwidth="800000"><SegmentList duration="6">` + "\n")
	for i := range 600 {
		fmt.Fprintf(&b, `<SegmentURL media="video/seg_%05d.m4s"/>`+"\n", i)
	}
	b.WriteString("</SegmentList></Representation></AdaptationSet></Period></MPD>\n")
	return b.String()
}

func gunzip(t *testing.T, b []byte, what string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: body is not gzip: %v", what, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: gunzip: %v", what, err)
	}
	return out
}

// mustGzip checks a compressed 200 of want: Content-Encoding, Vary, an
// ETag of its own, a Content-Length of the bytes sent, and those bytes
// decompressing to want exactly. It returns the ETag.
func mustGzip(t *testing.T, r *response, want, what string) string {
	t.Helper()
	mustStatus(t, r, 200, what)
	mustHeader(t, r, "Content-Encoding", "gzip", what)
	if v := r.Header.Values("Vary"); len(v) == 0 || v[len(v)-1] != "Accept-Encoding" {
		t.Errorf("%s: Vary %q, want Accept-Encoding last", what, v)
	}
	if cl := r.header("Content-Length"); cl != fmt.Sprint(len(r.body)) {
		t.Errorf("%s: Content-Length %q for %d bytes sent", what, cl, len(r.body))
	}
	if len(r.body) >= len(want) {
		t.Errorf("%s: %d bytes compressed for %d plain", what, len(r.body), len(want))
	}
	if got := gunzip(t, r.body, what); string(got) != want {
		t.Errorf("%s: decompressed body (%d bytes) differs from the file (%d bytes) at %d", what, len(got), len(want), firstDiff(got, []byte(want)))
	}
	etag := r.header("ETag")
	if !strings.HasSuffix(etag, `-gz"`) {
		t.Errorf("%s: ETag %q, want one ending -gz\" (its own, RFC 9110 §8.8.3)", what, etag)
	}
	return etag
}

// mustVary checks the response's Vary lines, joined (RFC 9110 §5.3).
func mustVary(t *testing.T, r *response, want, what string) {
	t.Helper()
	if got := strings.Join(r.Header.Values("Vary"), ", "); got != want {
		t.Errorf("%s: Vary %q, want %q", what, got, want)
	}
}

// mustIdentity checks a 200 of the file as it is: no Content-Encoding.
func mustIdentity(t *testing.T, r *response, want []byte, vary, what string) {
	t.Helper()
	mustStatus(t, r, 200, what)
	mustHeader(t, r, "Content-Encoding", "", what)
	mustVary(t, r, vary, what)
	mustBody(t, r, want, what)
}

// TestGzip: a playlist and a manifest come back gzip-compressed to a
// client that accepts it (RFC 9110 §12.5.3), with Vary: Accept-Encoding
// (§12.5.5) and an ETag of their own that If-None-Match matches; HEAD
// gives the compressed length; a segment, a Range request and a client
// without gzip (or refusing it with q=0) get the file's bytes. Each
// version is compressed once.
func TestGzip(t *testing.T) {
	for _, eng := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(eng), func(t *testing.T) { testGzip(t, eng) })
	}
}

func testGzip(t *testing.T, eng origin.Engine) {
	root := t.TempDir()
	pl, mpd := playlistFor(200), gzipManifest()
	writeFile(t, root, "v/index.m3u8", pl)
	writeFile(t, root, "v/manifest.mpd", mpd)
	writeFile(t, root, "v/sub.vtt", "WEBVTT\n\n"+strings.Repeat("00:00:01.000 --> 00:00:02.000\nHello, world\n\n", 20))
	writeSynth(t, root, "v/seg.ts", 8192)
	ts := startServer(t, root, func(c *origin.Config) { c.Engine = eng })
	c := ts.dial()
	ae := "Accept-Encoding: gzip, deflate, br"

	plTag := mustGzip(t, c.do("GET", "/v/index.m3u8", ae), pl, "GET playlist, gzip")
	mustGzip(t, c.do("GET", "/v/index.m3u8", ae), pl, "GET playlist again")
	mpdTag := mustGzip(t, c.do("GET", "/v/manifest.mpd", ae), mpd, "GET manifest (not inlined), gzip")
	mustGzip(t, c.do("GET", "/v/sub.vtt", "Accept-Encoding: *"), ts.fileString("v/sub.vtt"), "GET subtitles, Accept-Encoding: *")
	// RFC 9110 §5.3: field lines of a list make one list, in order.
	mustGzip(t, c.do("GET", "/v/index.m3u8", "Accept-Encoding: br", "Accept-Encoding: gzip"), pl, "GET playlist, gzip on a second Accept-Encoding line")
	mustIdentity(t, c.do("GET", "/v/index.m3u8", "Accept-Encoding: identity", "Accept-Encoding: gzip;q=0"), []byte(pl), "Accept-Encoding",
		"GET playlist, gzip;q=0 on a second line")
	gzGet := c.do("GET", "/v/manifest.mpd", ae)

	head := c.do("HEAD", "/v/manifest.mpd", ae)
	mustStatus(t, head, 200, "HEAD manifest, gzip")
	mustHeader(t, head, "Content-Encoding", "gzip", "HEAD manifest, gzip")
	mustHeader(t, head, "Content-Length", fmt.Sprint(len(gzGet.body)), "HEAD manifest, gzip")
	mustHeader(t, head, "ETag", mpdTag, "HEAD manifest, gzip")

	nm := c.do("GET", "/v/index.m3u8", ae, "If-None-Match: "+plTag)
	mustStatus(t, nm, 304, "If-None-Match of the gzip ETag")
	mustHeader(t, nm, "ETag", plTag, "304 of the gzip ETag")
	mustVary(t, nm, "Accept-Encoding", "304 of the gzip ETag")

	plain := c.do("GET", "/v/index.m3u8")
	mustIdentity(t, plain, []byte(pl), "Accept-Encoding", "GET playlist without Accept-Encoding")
	idTag := plain.header("ETag")
	if strings.TrimSuffix(plTag, `-gz"`) != strings.TrimSuffix(idTag, `"`) {
		t.Errorf("identity ETag %q, gzip ETag %q: want the identity tag with -gz inside the quotes", idTag, plTag)
	}
	// The identity tag names the other representation: not a match.
	mustGzip(t, c.do("GET", "/v/index.m3u8", ae, "If-None-Match: "+idTag), pl, "gzip GET with the identity ETag in If-None-Match")
	mustStatus(t, c.do("GET", "/v/index.m3u8", "If-None-Match: "+idTag), 304, "identity GET with the identity ETag")

	mustIdentity(t, c.do("GET", "/v/index.m3u8", "Accept-Encoding: gzip;q=0, br"), []byte(pl), "Accept-Encoding", "gzip;q=0")
	mustIdentity(t, c.do("GET", "/v/index.m3u8", "Accept-Encoding: gzip;q=0.5, identity"), []byte(pl), "Accept-Encoding", "identity preferred")
	mustIdentity(t, c.do("GET", "/v/seg.ts", ae), synthBytes("seg.ts", 0, 8192), "", "GET segment, gzip")

	rng := c.do("GET", "/v/index.m3u8", ae, "Range: bytes=0-99")
	mustStatus(t, rng, 206, "Range GET of a playlist, gzip")
	mustHeader(t, rng, "Content-Encoding", "", "Range GET of a playlist, gzip")
	mustVary(t, rng, "Accept-Encoding", "Range GET of a playlist, gzip")
	mustBody(t, rng, []byte(pl[:100]), "Range GET of a playlist, gzip")

	st := ts.srv.Stats().Gzip
	if st.Compressed != 8 || st.Made != 3 || st.Static != 0 {
		t.Errorf("gzip counters: %d compressed answers, %d compressions, %d static; want 8 (200s, HEAD included), 3 (once per file), 0", st.Compressed, st.Made, st.Static)
	}
}

// fileString reads a file under the server's root.
func (ts *testServer) fileString(rel string) string {
	b, err := os.ReadFile(filepath.Join(ts.root, filepath.FromSlash(rel)))
	if err != nil {
		ts.t.Fatal(err)
	}
	return string(b)
}

// TestGzipStatic: a precompressed name.gz not older than the file is sent
// as it is (nginx's gzip_static), with its own ETag; an older one is
// ignored: the file compressed by the server (-gzip on) or as it is
// (-gzip static).
func TestGzipStatic(t *testing.T) {
	root := t.TempDir()
	pl := playlistFor(100)
	writeFile(t, root, "new/index.m3u8", pl)
	writeFile(t, root, "old/index.m3u8", pl)
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.Header.Name = "index.m3u8" // bytes the server would not make itself
	zw.Write([]byte(pl))
	zw.Close()
	sibling := zb.Bytes()
	base := time.Now().Add(-time.Hour)
	for _, dir := range []string{"new", "old"} {
		writeFile(t, root, dir+"/index.m3u8.gz", string(sibling))
		sibAge := 30 * time.Minute // newer than the file
		if dir == "old" {
			sibAge = 2 * time.Hour
		}
		chtimes(t, filepath.Join(root, dir, "index.m3u8"), base)
		chtimes(t, filepath.Join(root, dir, "index.m3u8.gz"), time.Now().Add(-sibAge))
	}
	ae := "Accept-Encoding: gzip"
	for _, mode := range []origin.GzipMode{origin.GzipOn, origin.GzipStatic} {
		t.Run(string(mode), func(t *testing.T) {
			ts := startServer(t, root, func(c *origin.Config) { c.Gzip = mode })
			c := ts.dial()
			r := c.do("GET", "/new/index.m3u8", ae)
			tag := mustGzip(t, r, pl, "GET with a newer name.gz")
			if !bytes.Equal(r.body, sibling) {
				t.Errorf("GET with a newer name.gz: body is not the name.gz's bytes")
			}
			mustStatus(t, c.do("GET", "/new/index.m3u8", ae, "If-None-Match: "+tag), 304, "If-None-Match of the name.gz's ETag")
			head := c.do("HEAD", "/new/index.m3u8", ae)
			mustHeader(t, head, "Content-Length", fmt.Sprint(len(sibling)), "HEAD with a newer name.gz")

			r = c.do("GET", "/old/index.m3u8", ae)
			if mode == origin.GzipStatic {
				mustIdentity(t, r, []byte(pl), "Accept-Encoding", "-gzip static, older name.gz")
			} else {
				mustGzip(t, r, pl, "-gzip on, older name.gz")
				if bytes.Equal(r.body, sibling) {
					t.Errorf("-gzip on, older name.gz: the older name.gz was sent")
				}
			}
			st := ts.srv.Stats().Gzip
			wantMade := int64(0)
			if mode == origin.GzipOn {
				wantMade = 1
			}
			if st.Static != 2 || st.Made != wantMade {
				t.Errorf("gzip counters: %d static, %d compressions; want 2, %d", st.Static, st.Made, wantMade)
			}
		})
	}
}

// TestGzipStaticPausedWriter: a name.gz whose writer paused with it open
// for longer than -settle is not sent (its bytes so far are a truncated
// gzip stream): the file goes out as it is; once its writer closes it,
// the name.gz is sent. The kernel's word on writers decides for the
// sibling as it does for the file (TestPausedWriterNotPublished).
func TestGzipStaticPausedWriter(t *testing.T) {
	root := t.TempDir()
	pl := playlistFor(100)
	writeFile(t, root, "v/index.m3u8", pl)
	chtimes(t, filepath.Join(root, "v", "index.m3u8"), time.Now().Add(-time.Hour))
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.Write([]byte(pl))
	zw.Close()
	sibling := zb.Bytes()
	ts := startServer(t, root, func(c *origin.Config) {
		c.Gzip, c.Settle = origin.GzipStatic, 200*time.Millisecond
	})
	w, err := os.Create(filepath.Join(root, "v", "index.m3u8.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(sibling[:len(sibling)/2]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the writer pauses: longer than -settle
	c := ts.dial()
	ae := "Accept-Encoding: gzip"
	mustIdentity(t, c.do("GET", "/v/index.m3u8", ae), []byte(pl), "Accept-Encoding", "a name.gz whose writer paused with it open")
	if _, err := w.Write(sibling[len(sibling)/2:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var r *response
	waitFor(t, 10*time.Second, "the closed name.gz sent", func() bool {
		r = c.do("GET", "/v/index.m3u8", ae)
		return r.Header.Get("Content-Encoding") == "gzip"
	})
	mustGzip(t, r, pl, "the closed name.gz")
	if !bytes.Equal(r.body, sibling) {
		t.Errorf("the closed name.gz: body is not its bytes")
	}
}

// TestGzipOff: -gzip off sends every file as it is, with no Vary.
func TestGzipOff(t *testing.T) {
	root := t.TempDir()
	pl := playlistFor(50)
	writeFile(t, root, "index.m3u8", pl)
	writeFile(t, root, "index.m3u8.gz", "not used")
	ts := startServer(t, root, func(c *origin.Config) { c.Gzip = origin.GzipOff })
	mustIdentity(t, ts.get("/index.m3u8", "Accept-Encoding: gzip"), []byte(pl), "", "-gzip off")
}

func chtimes(t *testing.T, p string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestGzipVaryWithCORS: Vary: Accept-Encoding goes beside CORS's Vary:
// Origin, not over it.
func TestGzipVaryWithCORS(t *testing.T) {
	root := t.TempDir()
	pl := playlistFor(50)
	writeFile(t, root, "index.m3u8", pl)
	ts := startServer(t, root, func(c *origin.Config) { c.CORSOrigins = []string{"https://player.example"} })
	r := ts.get("/index.m3u8", "Accept-Encoding: gzip", "Origin: https://player.example")
	mustVary(t, r, "Origin, Accept-Encoding", "gzip with a CORS allow list")
	mustGzip(t, r, pl, "gzip with a CORS allow list")
}
