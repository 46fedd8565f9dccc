package origin_test

import (
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
)

// rangeRoot is a plain-HTTP server over the readable fixture of
// net/http's tests: "0123456789".
func rangeRoot(t *testing.T) *testServer { return serverMode{}.rangeRoot(t) }

// rangeRoot is a server in mode over the readable fixture of net/http's
// tests: "0123456789". The files exist before the server starts, so no
// late watcher event for them turns a counted cache hit into a miss.
func (mode serverMode) rangeRoot(t *testing.T) *testServer {
	root := t.TempDir()
	writeFile(t, root, "test/digits.txt", "0123456789")
	writeSynth(t, root, "seg.m4s", 100_000)
	writeFile(t, root, "empty.bin", "")
	// Published an hour ago: a file written just now can have an mtime
	// later than the server's (lagging) Date, and is then sent with the
	// Date as its Last-Modified (RFC 9110 §8.8.2.1), which moves between
	// two requests; these tests compare validators across requests.
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, f := range []string{"test/digits.txt", "seg.m4s", "empty.bin"} {
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(f)), past, past); err != nil {
			t.Fatal(err)
		}
	}
	return mode.start(t, root, nil)
}

// TestSingleRanges: RFC 9110 §14.1.2 and §14.3 over one keep-alive
// connection, so a wrong Content-Length would also break the next case.
func TestSingleRanges(t *testing.T) { everyMode(t, testSingleRanges) }

func testSingleRanges(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	c := ts.dial()
	huge := "99999999999999999999999"
	tests := []struct {
		name, rng string
		status    int
		body      string
		cr        string // Content-Range
	}{
		{"none", "", 200, "0123456789", ""},
		{"first byte", "bytes=0-0", 206, "0", "bytes 0-0/10"},
		{"safari probe", "bytes=0-1", 206, "01", "bytes 0-1/10"},
		{"middle", "bytes=2-5", 206, "2345", "bytes 2-5/10"},
		{"open ended", "bytes=5-", 206, "56789", "bytes 5-9/10"},
		{"suffix", "bytes=-3", 206, "789", "bytes 7-9/10"},
		{"suffix longer than file", "bytes=-20", 206, "0123456789", "bytes 0-9/10"},
		{"last beyond end clamps", "bytes=0-100", 206, "0123456789", "bytes 0-9/10"},
		{"last byte", "bytes=9-9", 206, "9", "bytes 9-9/10"},
		{"unit is case-insensitive", "BYTES=1-2", 206, "12", "bytes 1-2/10"},
		{"whitespace around comma", "bytes=1-2 , ", 206, "12", "bytes 1-2/10"},
		{"huge last clamps", "bytes=3-" + huge, 206, "3456789", "bytes 3-9/10"},
		{"huge suffix is whole file", "bytes=-" + huge, 206, "0123456789", "bytes 0-9/10"},
		{"overlap coalesces", "bytes=0-1,1-2", 206, "012", "bytes 0-2/10"},
		{"adjacent coalesces", "bytes=0-1,2-3", 206, "0123", "bytes 0-3/10"},
		{"unsatisfiable dropped", "bytes=20-30,4-4", 206, "4", "bytes 4-4/10"},
		// §14.1.1: "A range-spec is invalid if the last-pos value is present
		// and less than the first-pos"; an invalid Range is ignored (§14.2).
		{"last before first is ignored", "bytes=5-2", 200, "0123456789", ""},
		{"garbage ignored", "bytes=abc", 200, "0123456789", ""},
		{"unknown unit ignored", "items=0-1", 200, "0123456789", ""},
		{"empty set ignored", "bytes=", 200, "0123456789", ""},
		{"signed number ignored", "bytes=+1-2", 200, "0123456789", ""},
		// §14.1.3: no satisfiable range → 416 with "bytes */10".
		{"first beyond end", "bytes=10-", 416, "", "bytes */10"},
		{"huge first", "bytes=" + huge + "-", 416, "", "bytes */10"},
		{"zero suffix", "bytes=-0", 416, "", "bytes */10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdrs []string
			if tt.rng != "" {
				hdrs = append(hdrs, "Range: "+tt.rng)
			}
			r := c.do("GET", "/test/digits.txt", hdrs...)
			what := fmt.Sprintf("GET Range: %q", tt.rng)
			mustStatus(t, r, tt.status, what)
			mustHeader(t, r, "Content-Range", tt.cr, what)
			if tt.status != 416 {
				mustBody(t, r, []byte(tt.body), what)
				mustHeader(t, r, "Content-Type", "text/plain; charset=utf-8", what)
			}
			mustHeader(t, r, "Accept-Ranges", map[bool]string{true: "", false: "bytes"}[tt.status == 416], what)
		})
	}
}

// TestManyIdenticalRanges: Go's ServeContent answers 2000 copies of 0-0 with
// 320 kB for a 100 kB file; coalescing makes it one byte.
func TestManyIdenticalRanges(t *testing.T) { everyMode(t, testManyIdenticalRanges) }

func testManyIdenticalRanges(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	rng := "bytes=" + strings.TrimSuffix(strings.Repeat("0-0,", 2000), ",")
	r := ts.get("/seg.m4s", "Range: "+rng)
	mustStatus(t, r, 206, "2000 x 0-0")
	mustBody(t, r, synthBytes("seg.m4s", 0, 1), "2000 x 0-0")
	mustHeader(t, r, "Content-Range", "bytes 0-0/100000", "2000 x 0-0")
}

// TestTooManyRanges: over the cap the server ignores Range (RFC 9110 §14.2
// allows it) and sends the file, instead of a huge multipart body.
func TestTooManyRanges(t *testing.T) { everyMode(t, testTooManyRanges) }

func testTooManyRanges(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", func(c *origin.Config) { c.MaxRanges = 3 })
	writeSynth(t, ts.root, "seg.m4s", 100_000)
	r := ts.get("/seg.m4s", "Range: bytes=0-0,10-10,20-20,30-30")
	mustStatus(t, r, 200, "4 ranges, cap 3")
	mustBody(t, r, synthBytes("seg.m4s", 0, 100_000), "4 ranges, cap 3")
	r = ts.get("/seg.m4s", "Range: bytes=0-0,10-10,20-20")
	mustStatus(t, r, 206, "3 ranges, cap 3")
}

// TestMultipartRanges checks every part's headers and bytes, the exact
// Content-Length, and the part order (RFC 9110 §14.6: parts in the order
// requested, less the coalesced ones).
func TestMultipartRanges(t *testing.T) { everyMode(t, testMultipartRanges) }

func testMultipartRanges(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	c := ts.dial()
	type part struct {
		cr   string
		off  int64
		size int64
	}
	tests := []struct {
		name, rng string
		parts     []part
	}{
		{"two", "bytes=0-9,50000-50009", []part{{"bytes 0-9/100000", 0, 10}, {"bytes 50000-50009/100000", 50000, 10}}},
		{"requested order kept", "bytes=99990-,0-0", []part{{"bytes 99990-99999/100000", 99990, 10}, {"bytes 0-0/100000", 0, 1}}},
		{"suffix and coalesced", "bytes=-5,100-199,150-299,1000-1000", []part{
			{"bytes 99995-99999/100000", 99995, 5}, {"bytes 100-299/100000", 100, 200}, {"bytes 1000-1000/100000", 1000, 1}}},
		{"empty elements", "bytes=0-0,,,5-5", []part{{"bytes 0-0/100000", 0, 1}, {"bytes 5-5/100000", 5, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do("GET", "/seg.m4s", "Range: "+tt.rng)
			what := fmt.Sprintf("GET Range: %q", tt.rng)
			mustStatus(t, r, 206, what)
			mt, params, err := mime.ParseMediaType(r.header("Content-Type"))
			if err != nil || mt != "multipart/byteranges" {
				t.Fatalf("%s: Content-Type %q (%v), want multipart/byteranges", what, r.header("Content-Type"), err)
			}
			if cl := r.header("Content-Length"); cl != fmt.Sprint(len(r.body)) {
				t.Fatalf("%s: Content-Length %s, body %d bytes", what, cl, len(r.body))
			}
			mr := multipart.NewReader(strings.NewReader(string(r.body)), params["boundary"])
			for i, want := range tt.parts {
				p, err := mr.NextPart()
				if err != nil {
					t.Fatalf("%s: part %d: %v", what, i, err)
				}
				if got := p.Header.Get("Content-Range"); got != want.cr {
					t.Errorf("%s: part %d Content-Range %q, want %q", what, i, got, want.cr)
				}
				if got := p.Header.Get("Content-Type"); got != "video/iso.segment" {
					t.Errorf("%s: part %d Content-Type %q, want video/iso.segment", what, i, got)
				}
				data, _ := io.ReadAll(p)
				if string(data) != string(synthBytes("seg.m4s", want.off, want.size)) {
					t.Errorf("%s: part %d bytes differ", what, i)
				}
			}
			if _, err := mr.NextPart(); err != io.EOF {
				t.Errorf("%s: after %d parts: %v, want io.EOF", what, len(tt.parts), err)
			}
		})
	}
}

func TestEmptyFile(t *testing.T) { everyMode(t, testEmptyFile) }

func testEmptyFile(t *testing.T, mode serverMode) {
	ts := mode.rangeRoot(t)
	r := ts.get("/empty.bin")
	mustStatus(t, r, 200, "GET empty")
	mustBody(t, r, nil, "GET empty")
	// §14.1.3: nothing in a zero-length representation is satisfiable.
	r = ts.get("/empty.bin", "Range: bytes=0-")
	mustStatus(t, r, 416, "GET empty with Range")
	mustHeader(t, r, "Content-Range", "bytes */0", "GET empty with Range")
}
