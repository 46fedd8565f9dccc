package origin_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/cache"
	"segorigin/internal/testwait"
	"segorigin/origin"
	"segorigin/origin/etag"
)

var contentTagRE = regexp.MustCompile(`^"[0-9a-f]{32}"$`)

func contentETag(c *origin.Config) { c.ETag = origin.ETagContent }

// TestContentETag: with -etag content two origins whose copies of a file
// have different mtimes give the same strong ETag, a file with other
// bytes another, and If-None-Match (RFC 9110 §13.1.2), If-Match (§13.1.1)
// and If-Range (§13.1.5) are judged on it, on every engine.
func TestContentETag(t *testing.T) { everyMode(t, testContentETag) }

func testContentETag(t *testing.T, mode serverMode) {
	rootA, rootB := t.TempDir(), t.TempDir()
	for _, root := range []string{rootA, rootB} {
		writeSynth(t, root, "v/seg.m4s", 300<<10)
		writeSynth(t, root, "v/other.m4s", 300<<10)
		writeFile(t, root, "v/index.m3u8", "#EXTM3U\n#EXT-X-ENDLIST\n")
	}
	old := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []string{"v/seg.m4s", "v/index.m3u8"} {
		if err := os.Chtimes(filepath.Join(rootB, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	a, b := mode.start(t, rootA, contentETag), mode.start(t, rootB, contentETag)
	for _, f := range []string{"/v/seg.m4s", "/v/index.m3u8"} {
		ra, rb := a.get(f), b.get(f)
		mustStatus(t, ra, 200, "A "+f)
		mustStatus(t, rb, 200, "B "+f)
		ta, tb := ra.header("ETag"), rb.header("ETag")
		if !contentTagRE.MatchString(ta) {
			t.Errorf("%s: ETag %q, want a quoted 128-bit hash", f, ta)
		}
		if ta != tb {
			t.Errorf("%s: ETag %q on one origin, %q on the other: same bytes, different mtimes, want one tag", f, ta, tb)
		}
		if ra.header("Last-Modified") == rb.header("Last-Modified") {
			t.Errorf("%s: both copies Last-Modified %q; the test needs different mtimes", f, ra.header("Last-Modified"))
		}
		if again := a.get(f).header("ETag"); again != ta {
			t.Errorf("%s: ETag %q, then %q: a validator must not change while the bytes do not", f, ta, again)
		}
	}
	seg := a.get("/v/seg.m4s")
	tag := seg.header("ETag")
	if other := a.get("/v/other.m4s").header("ETag"); other == tag {
		t.Errorf("two files with different bytes share ETag %q", tag)
	}

	r := b.get("/v/seg.m4s", "If-None-Match: "+tag)
	mustStatus(t, r, 304, "If-None-Match with the other origin's content tag")
	mustHeader(t, r, "ETag", tag, "304")
	mustStatus(t, b.get("/v/seg.m4s", `If-Match: "0123456789abcdef0123456789abcdef"`), 412, "If-Match with another tag")
	mustStatus(t, b.get("/v/seg.m4s", "If-Match: "+tag), 200, "If-Match with the content tag")
	r = b.get("/v/seg.m4s", "Range: bytes=0-9", "If-Range: "+tag)
	mustStatus(t, r, 206, "If-Range with the content tag")
	mustBody(t, r, synthBytes("seg.m4s", 0, 10), "If-Range 206")
	fi, err := os.Stat(filepath.Join(rootB, "v/seg.m4s"))
	if err != nil {
		t.Fatal(err)
	}
	r = b.get("/v/seg.m4s", "Range: bytes=0-9", "If-Range: "+cache.ETag(fi.Size(), fi.ModTime()))
	mustStatus(t, r, 200, "If-Range with the size-mtime tag")
	mustBody(t, r, synthBytes("seg.m4s", 0, 300<<10), "If-Range with a tag that is not current")
}

// TestContentETagAttribute: the hash is kept in the file's extended
// attribute, so a server started later (a restart) serves the same tag
// without hashing; a rewrite in place that restores size and mtime gets a
// new tag, never the stored one.
func TestContentETagAttribute(t *testing.T) {
	root := t.TempDir()
	p := writeSynth(t, root, "seg.ts", 1<<20)
	first := startServer(t, root, contentETag)
	r := first.get("/seg.ts")
	mustStatus(t, r, 200, "first server")
	tag := r.header("ETag")
	if st := first.srv.Stats().Content; st.Hashed != 1 || st.HashBytes != 1<<20 {
		t.Errorf("first server: Hashed %d (%d bytes), want 1 (%d)", st.Hashed, st.HashBytes, 1<<20)
	}
	var buf [256]byte
	n, err := unix.Getxattr(p, etag.Attr, buf[:])
	if errors.Is(err, unix.ENOTSUP) {
		t.Skipf("the temp directory's file system keeps no user extended attributes: %v", err)
	}
	if err != nil {
		t.Fatalf("getxattr %s: %v", etag.Attr, err)
	}
	if s, err := etag.ParseAttr(buf[:n]); err != nil || s.ETag != tag {
		t.Fatalf("attribute %q (%v), want one holding %s", buf[:n], err, tag)
	}

	second := startServer(t, root, contentETag)
	r = second.get("/seg.ts")
	mustStatus(t, r, 200, "second server")
	mustHeader(t, r, "ETag", tag, "second server, from the attribute")
	if st := second.srv.Stats().Content; st.Hashed != 0 || st.FromAttr != 1 {
		t.Errorf("second server: Hashed %d, FromAttr %d; want 0, 1", st.Hashed, st.FromAttr)
	}

	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// The attribute tells its own write from a change by ctime, within
	// 20 ms of when it was written (origin/etag, rule 1): rewrite later.
	stored, _ := etag.ParseAttr(buf[:n])
	testwait.For(t, time.Second, "50 ms past the attribute's write", func() bool {
		return time.Now().UnixNano() > stored.SetAt+50e6
	})
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("rewritten"), 1000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	want := synthBytes("seg.ts", 0, 1<<20)
	copy(want[1000:], "rewritten")
	testwait.For(t, 5*time.Second, "a new tag after the rewrite", func() bool {
		return second.get("/seg.ts").header("ETag") != tag
	})
	r = second.get("/seg.ts")
	mustBody(t, r, want, "after the rewrite")
	if !contentTagRE.MatchString(r.header("ETag")) {
		t.Errorf("after the rewrite: ETag %q, want a content tag", r.header("ETag"))
	}
}

// TestContentETagDeadline: a request for a file whose hash is not known
// by -cold-deadline gets 503 with Retry-After and no-store, never another
// validator; the hash goes on, and a later request gets the tag.
func TestContentETagDeadline(t *testing.T) {
	root := t.TempDir()
	writeSynth(t, root, "big.mp4", 128<<20)
	ts := startServer(t, root, func(c *origin.Config) {
		contentETag(c)
		c.ColdDeadline = time.Millisecond
	})
	r := ts.get("/big.mp4", "Range: bytes=0-99")
	mustStatus(t, r, http.StatusServiceUnavailable, "before the hash is known")
	if r.header("Retry-After") == "" || r.header("Cache-Control") != "no-store" {
		t.Errorf("503: Retry-After %q, Cache-Control %q; want a value, no-store", r.header("Retry-After"), r.header("Cache-Control"))
	}
	if r.header("ETag") != "" {
		t.Errorf("503 carries ETag %q", r.header("ETag"))
	}
	testwait.For(t, 60*time.Second, "the hash of 128 MiB (race detector, shared cores)", func() bool { return ts.srv.Stats().Content.Hashed == 1 })
	r = ts.get("/big.mp4", "Range: bytes=0-99")
	mustStatus(t, r, 206, "once hashed")
	mustBody(t, r, synthBytes("big.mp4", 0, 100), "once hashed")
	if !contentTagRE.MatchString(r.header("ETag")) {
		t.Errorf("ETag %q, want a content tag", r.header("ETag"))
	}
	if st := ts.srv.Stats().Content; st.Refused < 1 {
		t.Errorf("Content.Refused = %d, want >= 1", st.Refused)
	}
}
