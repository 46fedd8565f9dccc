package origin_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"segorigin/internal/slowfs"
	"segorigin/origin"
	"segorigin/origin/coldread"
	"segorigin/origin/token"
)

// The read-ahead tests prove "the next object is in memory before the
// player asks" by behaviour: after a request, the test waits for the
// read-ahead to be issued, then holds every read at the disk; the next
// request must still be answered, which it can only be from the page
// cache.

// raRig mounts backing through slowfs and starts a server on it.
func raRig(t *testing.T, backing string, mod func(*origin.ReadAheadConfig)) (*slowfs.FS, *testServer) {
	t.Helper()
	f := slowfs.MountT(t, backing, 0)
	ts := startServer(t, f.Dir(), func(c *origin.Config) {
		c.Watch = false
		if mod != nil {
			mod(&c.ReadAhead)
		}
	})
	return f, ts
}

// issued waits until n read-aheads have been read into the page cache.
func issued(t *testing.T, ts *testServer, n int64) {
	t.Helper()
	ra := func() origin.ReadAheadStats { return ts.srv.Stats().ReadAhead }
	waitFor(t, 10*time.Second, fmt.Sprintf("%d read-aheads issued", n), func() bool { return ra().Issued >= n })
}

// servedFromMemory holds the disk and checks that target still arrives
// intact (so its bytes were resident) and counts as a read-ahead hit.
func servedFromMemory(t *testing.T, f *slowfs.FS, ts *testServer, target string, want []byte, headers ...string) {
	t.Helper()
	ra := func() origin.ReadAheadStats { return ts.srv.Stats().ReadAhead }
	hits := ra().Hit
	// The read-ahead was counted once its read returned; the target's
	// pages must be in the page cache now. Checked through the mount
	// before the disk is held, so a failure says which went wrong: the
	// read-ahead (not resident here) or the request path (resident here,
	// yet read from the disk).
	name := strings.TrimPrefix(target, "/")
	off, n := rangeOf(t, headers, int64(len(want)))
	if !residentAt(t, filepath.Join(f.Dir(), filepath.FromSlash(name)), off, n) {
		t.Fatalf("%s [%d, %d) is not in the page cache after its read-ahead was counted (%+v)", target, off, off+n, ra())
	}
	f.Hold()
	defer f.Open()
	c := ts.dial()
	c.conn.SetDeadline(time.Now().Add(10 * time.Second)) // a read at the disk would hang here
	r := c.do("GET", target, headers...)
	mustBody(t, r, want, target+" with the disk held")
	if got := ra().Hit; got != hits+1 {
		t.Errorf("ReadAhead.Hit after %s = %d, want %d", target, got, hits+1)
	}
}

// rangeOf is the span a test's Range header (bytes=a-b) asks for, or the
// whole body of n bytes.
func rangeOf(t *testing.T, headers []string, n int64) (off, length int64) {
	t.Helper()
	for _, h := range headers {
		var a, b int64
		if _, err := fmt.Sscanf(h, "Range: bytes=%d-%d", &a, &b); err == nil {
			return a, b - a + 1
		}
	}
	return 0, n
}

// residentAt reports whether [off, off+n) of path is in the page cache.
func residentAt(t *testing.T, path string, off, n int64) bool {
	t.Helper()
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		t.Fatal(err)
	}
	ok, err := coldread.Resident(int(fd.Fd()), off, n, st.Size())
	if err != nil {
		t.Fatalf("Resident(%s): %v", path, err)
	}
	return ok
}

func TestReadAheadNextPlaylistSegment(t *testing.T) {
	const n, size = 4, 256 << 10
	backing := t.TempDir()
	for i := range n {
		writeSynth(t, backing, fmt.Sprintf("v/seg%04d.ts", i), size)
	}
	writeFile(t, backing, "v/index.m3u8", playlistFor(n))
	f, ts := raRig(t, backing, nil)
	mustBody(t, ts.get("/v/index.m3u8"), []byte(playlistFor(n)), "playlist")
	waitFor(t, 10*time.Second, "the playlist indexed", func() bool { return ts.srv.Stats().ReadAhead.Indexed == 1 })
	mustBody(t, ts.get("/v/seg0000.ts"), synthBytes("seg0000.ts", 0, size), "first segment")
	issued(t, ts, 1)
	servedFromMemory(t, f, ts, "/v/seg0001.ts", synthBytes("seg0001.ts", 0, size))
	if got := ts.srv.Stats().ReadAhead.Predicted[0]; got < 1 {
		t.Errorf("ReadAhead.Predicted[playlist] = %d, want >= 1", got)
	}
}

func TestReadAheadNextByteRange(t *testing.T) {
	const span = 512 << 10
	backing := t.TempDir()
	writeSynth(t, backing, "b/all.mp4", 4*span)
	var pl strings.Builder
	pl.WriteString("#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:4\n")
	for i := range 4 {
		fmt.Fprintf(&pl, "#EXTINF:4,\n#EXT-X-BYTERANGE:%d@%d\nall.mp4\n", span, i*span)
	}
	writeFile(t, backing, "b/index.m3u8", pl.String())
	f, ts := raRig(t, backing, nil)
	ts.get("/b/index.m3u8")
	waitFor(t, 10*time.Second, "the playlist indexed", func() bool { return ts.srv.Stats().ReadAhead.Indexed == 1 })
	r := ts.get("/b/all.mp4", fmt.Sprintf("Range: bytes=%d-%d", span, 2*span-1))
	mustBody(t, r, synthBytes("all.mp4", span, span), "second span")
	issued(t, ts, 1)
	servedFromMemory(t, f, ts, "/b/all.mp4", synthBytes("all.mp4", 2*span, span),
		fmt.Sprintf("Range: bytes=%d-%d", 2*span, 3*span-1))
}

func TestReadAheadNextTemplateNumber(t *testing.T) {
	const size = 128 << 10
	backing := t.TempDir()
	for i := 1; i <= 3; i++ {
		writeSynth(t, backing, fmt.Sprintf("d/chunk-0-%03d.m4s", i), size)
	}
	f, ts := raRig(t, backing, nil)
	mustBody(t, ts.get("/d/chunk-0-001.m4s"), synthBytes("chunk-0-001.m4s", 0, size), "first chunk")
	issued(t, ts, 1)
	servedFromMemory(t, f, ts, "/d/chunk-0-002.m4s", synthBytes("chunk-0-002.m4s", 0, size))
}

func TestReadAheadTemplateOff(t *testing.T) {
	backing := t.TempDir()
	writeSynth(t, backing, "d/chunk-0-001.m4s", 1000)
	writeSynth(t, backing, "d/chunk-0-002.m4s", 1000)
	_, ts := raRig(t, backing, func(c *origin.ReadAheadConfig) { c.Template = false })
	ts.get("/d/chunk-0-001.m4s")
	// Predictions are submitted before the body is sent: none was.
	ra := ts.srv.Stats().ReadAhead
	for src, got := range ra.Predicted {
		if got != 0 {
			t.Errorf("ReadAhead.Predicted[%d] with -readahead-template=false = %d, want 0", src, got)
		}
	}
}

// writeOnDemandMP4 writes ftyp, a sidx of n subsegments of sub bytes, then
// their bytes, and returns the subsegments' first offset.
func writeOnDemandMP4(t *testing.T, root, rel string, n int, sub uint32) int64 {
	t.Helper()
	ftyp := append(binary.BigEndian.AppendUint32(nil, 16), "ftypisom\x00\x00\x02\x00"...)
	p := make([]byte, 4, 64)
	p = binary.BigEndian.AppendUint32(p, 1)
	p = binary.BigEndian.AppendUint32(p, 12800)
	p = binary.BigEndian.AppendUint32(p, 0)
	p = binary.BigEndian.AppendUint32(p, 0) // first_offset
	p = binary.BigEndian.AppendUint16(p, 0)
	p = binary.BigEndian.AppendUint16(p, uint16(n))
	for range n {
		p = binary.BigEndian.AppendUint32(p, sub)
		p = binary.BigEndian.AppendUint32(p, 25600)
		p = binary.BigEndian.AppendUint32(p, 0x90000000)
	}
	sidx := append(append(binary.BigEndian.AppendUint32(nil, uint32(8+len(p))), "sidx"...), p...)
	head := append(ftyp, sidx...)
	body := synthBytes(filepath.Base(rel), 0, int64(n)*int64(sub))
	path := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(head, body...), 0o644); err != nil {
		t.Fatal(err)
	}
	return int64(len(head))
}

func TestReadAheadNextSidxSubsegment(t *testing.T) {
	const sub = 384 << 10
	backing := t.TempDir()
	first := writeOnDemandMP4(t, backing, "o/v.mp4", 4, sub)
	f, ts := raRig(t, backing, nil)
	// A player reads the index range first, then subsegments in order.
	mustStatus(t, ts.get("/o/v.mp4", fmt.Sprintf("Range: bytes=0-%d", first-1)), 206, "index range")
	waitFor(t, 10*time.Second, "the sidx indexed", func() bool { return ts.srv.Stats().ReadAhead.Indexed == 1 })
	rng := func(i int64) string { return fmt.Sprintf("Range: bytes=%d-%d", first+i*sub, first+(i+1)*sub-1) }
	mustStatus(t, ts.get("/o/v.mp4", rng(0)), 206, "first subsegment")
	issued(t, ts, 1)
	servedFromMemory(t, f, ts, "/o/v.mp4", synthBytes("v.mp4", sub, sub), rng(1))
}

func TestReadAheadCMCD(t *testing.T) {
	const size = 128 << 10
	backing := t.TempDir()
	for _, n := range []string{"c/a.m4s", "c/hdr-next.m4s", "c/query-next.m4s"} {
		writeSynth(t, backing, n, size)
	}
	f, ts := raRig(t, backing, func(c *origin.ReadAheadConfig) { c.Template = false })
	ts.get("/c/a.m4s", `CMCD-Request: bl=2000,nor="hdr-next.m4s"`)
	issued(t, ts, 1)
	servedFromMemory(t, f, ts, "/c/hdr-next.m4s", synthBytes("hdr-next.m4s", 0, size))
	// Query form, URL-encoded (CTA-5004 §4): nor="query-next.m4s".
	ts.get("/c/a.m4s?CMCD=nor%3D%22query-next.m4s%22%2Csid%3D%22x%22")
	issued(t, ts, 2)
	servedFromMemory(t, f, ts, "/c/query-next.m4s", synthBytes("query-next.m4s", 0, size))
	if got := ts.srv.Stats().ReadAhead.Predicted[4]; got != 2 {
		t.Errorf("ReadAhead.Predicted[cmcd] = %d, want 2", got)
	}
}

// TestReadAheadWastedCounted: a read-ahead object evicted before its
// request is counted as wasted, not as a hit.
func TestReadAheadWastedCounted(t *testing.T) {
	const size = 128 << 10
	backing := t.TempDir()
	writeSynth(t, backing, "w/chunk-001.m4s", size)
	writeSynth(t, backing, "w/chunk-002.m4s", size)
	f, ts := raRig(t, backing, nil)
	ts.get("/w/chunk-001.m4s")
	issued(t, ts, 1)
	if err := slowfs.Evict(filepath.Join(f.Dir(), "w/chunk-002.m4s")); err != nil {
		t.Fatal(err)
	}
	mustBody(t, ts.get("/w/chunk-002.m4s"), synthBytes("chunk-002.m4s", 0, size), "evicted read-ahead object")
	ra := ts.srv.Stats().ReadAhead
	if w, h := ra.Wasted, ra.Hit; w != 1 || h != 0 {
		t.Errorf("after an evicted read-ahead: Wasted %d, Hit %d; want 1, 0", w, h)
	}
}

// TestReadAheadHitIsNotUnused: a read-ahead object that was requested is
// a hit, never also counted unused.
func TestReadAheadHitIsNotUnused(t *testing.T) {
	const size = 64 << 10
	backing := t.TempDir()
	writeSynth(t, backing, "u/chunk-001.m4s", size)
	writeSynth(t, backing, "u/chunk-002.m4s", size)
	f, ts := raRig(t, backing, nil)
	ts.get("/u/chunk-001.m4s")
	issued(t, ts, 1)
	servedFromMemory(t, f, ts, "/u/chunk-002.m4s", synthBytes("chunk-002.m4s", 0, size))
	if got := ts.srv.Stats().ReadAhead.Unused; got != 0 {
		t.Errorf("ReadAhead.Unused after its request = %d, want 0", got)
	}
}

// TestReadAheadRepeatPredictsOnce: a whole body asked for again within a
// second of the request that predicted from it predicts nothing again,
// and once the second has passed it does. A token that opens only the
// chunk asked for shows it: its numbering guess (the next chunk) is
// refused, and counted, each time it is made, since a refusal reads
// nothing and is not remembered as issued.
func TestReadAheadRepeatPredictsOnce(t *testing.T) {
	const size = 16 << 10
	backing := t.TempDir()
	writeSynth(t, backing, "r/chunk-0-001.m4s", size)
	writeSynth(t, backing, "r/chunk-0-002.m4s", size)
	key := token.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	ring, err := token.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	ts := startServer(t, backing, func(c *origin.Config) {
		c.Watch = false
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		c.Auth.Keys = ring
	})
	tok := mustSign(t, key, token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/r/chunk-0-001.m4s"}})
	target := "/t/" + token.PathSegment(tok) + "/r/chunk-0-001.m4s"
	const unauthorized = 2 // Refused's index (ReadAheadRefusal)
	if got := origin.ReadAheadRefusal(unauthorized); got != "unauthorized" {
		t.Fatalf("ReadAheadRefusal(%d) = %q", unauthorized, got)
	}
	refused := func() int64 { return ts.srv.Stats().ReadAhead.Refused[unauthorized] }
	get := func() {
		t.Helper()
		mustBody(t, ts.get(target), synthBytes("chunk-0-001.m4s", 0, size), "the chunk the token opens")
	}
	get()
	if got := refused(); got != 1 {
		t.Fatalf("Refused[unauthorized] after the first request = %d, want 1", got)
	}
	for range 3 {
		get()
	}
	if got := refused(); got != 1 {
		t.Fatalf("Refused[unauthorized] after 3 more within the second = %d, want 1", got)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	get()
	if got := refused(); got != 2 {
		t.Fatalf("Refused[unauthorized] a second later = %d, want 2", got)
	}
	if st := ts.srv.Stats().ReadAhead; st.Predicted != [5]int64{} || st.Issued != 0 {
		t.Errorf("a refused guess was predicted or read: %+v", st)
	}
}
