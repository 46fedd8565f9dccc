package origin_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"segorigin/origin"
)

// TestConditionals: RFC 9110 §13.1 and the precedence of §13.2.2.
func TestConditionals(t *testing.T) { everyMode(t, testConditionals) }

func testConditionals(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", nil)
	p := writeFile(t, ts.root, "test/digits.txt", "0123456789")
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	etag := ts.get("/test/digits.txt").header("ETag")
	if len(etag) < 3 || etag[0] != '"' {
		t.Fatalf("ETag %q is not a strong entity tag", etag)
	}
	lm := mtime.UTC().Format(http.TimeFormat)
	before := mtime.Add(-time.Minute).UTC().Format(http.TimeFormat)
	after := mtime.Add(time.Minute).UTC().Format(http.TimeFormat)
	c := ts.dial()
	tests := []struct {
		name    string
		method  string
		headers []string
		status  int
		body    string
	}{
		{"if-none-match hit", "GET", []string{"If-None-Match: " + etag}, 304, ""},
		{"if-none-match weak compare", "GET", []string{"If-None-Match: W/" + etag}, 304, ""},
		{"if-none-match list", "GET", []string{`If-None-Match: "a", ` + etag}, 304, ""},
		{"if-none-match star", "GET", []string{"If-None-Match: *"}, 304, ""},
		{"if-none-match miss", "GET", []string{`If-None-Match: "other"`}, 200, "0123456789"},
		{"if-none-match head", "HEAD", []string{"If-None-Match: " + etag}, 304, ""},
		{"if-match hit", "GET", []string{"If-Match: " + etag}, 200, "0123456789"},
		{"if-match star", "GET", []string{"If-Match: *"}, 200, "0123456789"},
		{"if-match miss", "GET", []string{`If-Match: "other"`}, 412, ""},
		// §13.1.1: If-Match uses the strong comparison: a weak tag never matches.
		{"if-match weak", "GET", []string{"If-Match: W/" + etag}, 412, ""},
		{"if-unmodified-since before", "GET", []string{"If-Unmodified-Since: " + before}, 412, ""},
		{"if-unmodified-since after", "GET", []string{"If-Unmodified-Since: " + after}, 200, "0123456789"},
		{"if-unmodified-since invalid ignored", "GET", []string{"If-Unmodified-Since: yesterday"}, 200, "0123456789"},
		{"if-modified-since equal", "GET", []string{"If-Modified-Since: " + lm}, 304, ""},
		{"if-modified-since after", "GET", []string{"If-Modified-Since: " + after}, 304, ""},
		{"if-modified-since before", "GET", []string{"If-Modified-Since: " + before}, 200, "0123456789"},
		{"if-modified-since invalid ignored", "GET", []string{"If-Modified-Since: garbage"}, 200, "0123456789"},
		// §13.2.2 step 3 before 4: If-None-Match decides, If-Modified-Since is ignored.
		{"inm miss beats ims", "GET", []string{`If-None-Match: "other"`, "If-Modified-Since: " + after}, 200, "0123456789"},
		// Step 1 before 3: a failed If-Match is 412 even if If-None-Match matches.
		{"if-match before inm", "GET", []string{`If-Match: "other"`, "If-None-Match: " + etag}, 412, ""},
		// Step 1 replaces 2: If-Unmodified-Since is ignored when If-Match is present.
		{"if-match beats ius", "GET", []string{"If-Match: " + etag, "If-Unmodified-Since: " + before}, 200, "0123456789"},
		// §13.1.5 If-Range.
		{"if-range etag match", "GET", []string{"Range: bytes=0-1", "If-Range: " + etag}, 206, "01"},
		{"if-range etag mismatch", "GET", []string{"Range: bytes=0-1", `If-Range: "other"`}, 200, "0123456789"},
		{"if-range weak etag never matches", "GET", []string{"Range: bytes=0-1", "If-Range: W/" + etag}, 200, "0123456789"},
		{"if-range date exact", "GET", []string{"Range: bytes=0-1", "If-Range: " + lm}, 206, "01"},
		{"if-range date differs", "GET", []string{"Range: bytes=0-1", "If-Range: " + after}, 200, "0123456789"},
		{"if-range garbage", "GET", []string{"Range: bytes=0-1", "If-Range: nonsense"}, 200, "0123456789"},
		// §13.2.2: preconditions come before Range: a 304 wins over 206.
		{"inm before range", "GET", []string{"Range: bytes=0-1", "If-None-Match: " + etag}, 304, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do(tt.method, "/test/digits.txt", tt.headers...)
			what := tt.method + " " + tt.name
			mustStatus(t, r, tt.status, what)
			switch tt.status {
			case 304:
				if len(r.body) != 0 {
					t.Errorf("%s: 304 with a body", what)
				}
				// §15.4.5: a 304 carries the validators and Cache-Control a 200 would.
				mustHeader(t, r, "ETag", etag, what)
				mustHeader(t, r, "Last-Modified", lm, what)
				mustHeader(t, r, "Cache-Control", "public, max-age=300", what)
			case 200, 206:
				if tt.method == "GET" {
					mustBody(t, r, []byte(tt.body), what)
				}
			}
		})
	}
}

// TestIfRangeDateMustBeStrong: a Last-Modified less than a second before the
// response's Date is weak (§8.8.2.2), and If-Range must not use it.
func TestIfRangeDateMustBeStrong(t *testing.T) { everyMode(t, testIfRangeDateMustBeStrong) }

func testIfRangeDateMustBeStrong(t *testing.T, mode serverMode) {
	now := time.Now().Truncate(time.Second)
	ts := mode.start(t, "", func(c *origin.Config) { c.Now = func() time.Time { return now } })
	p := writeFile(t, ts.root, "x.txt", "0123456789")
	if err := os.Chtimes(p, now, now); err != nil {
		t.Fatal(err)
	}
	lm := now.UTC().Format(http.TimeFormat)
	r := ts.get("/x.txt", "Range: bytes=0-1", "If-Range: "+lm)
	mustStatus(t, r, 200, "If-Range with a weak date")
	mustBody(t, r, []byte("0123456789"), "If-Range with a weak date")
}

// TestETagIgnoresInode: two copies with the same size and mtime have the same
// validators, so several origins agree.
func TestETagIgnoresInode(t *testing.T) { everyMode(t, testETagIgnoresInode) }

func testETagIgnoresInode(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", nil)
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, n := range []string{"a/seg.m4s", "b/seg.m4s"} {
		p := writeSynth(t, ts.root, n, 5000)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	a, b := ts.get("/a/seg.m4s"), ts.get("/b/seg.m4s")
	if a.header("ETag") != b.header("ETag") || a.header("Last-Modified") != b.header("Last-Modified") {
		t.Errorf("copies disagree: ETag %q vs %q, Last-Modified %q vs %q",
			a.header("ETag"), b.header("ETag"), a.header("Last-Modified"), b.header("Last-Modified"))
	}
	if _, err := os.Stat(filepath.Join(ts.root, "a/seg.m4s")); err != nil {
		t.Fatal(err)
	}
}
