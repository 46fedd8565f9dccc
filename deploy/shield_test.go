package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/cache"
	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
)

// streams are the fixture streams ffmpeg plays through the shield.
var streams = []string{
	"/hls/ts/master.m3u8",
	"/hls/fmp4/master.m3u8",
	"/hls/byterange/master.m3u8",
	"/dash/template/manifest.mpd",
	"/dash/ondemand/manifest.mpd",
}

// playlistMaxAge replaces segorigin's default playlist max-age (10 s) in
// this test, so the shield revalidates a playlist within the run.
const playlistMaxAge = 2 * time.Second

// rig is the whole topology under test.
type rig struct {
	topo    *topology
	origins []*origin
	addrs   []string // origin host:port, as the shield's upstream names them
	labels  []string // o1, o2, o3
	shield  *shield
	master  string // the content every origin holds a cp -a copy of
	client  *http.Client
	direct  *http.Client // to the origins, bypassing the shield
	logOff  int64        // access log read so far
}

// TestShield builds three segorigin origins in their own network
// namespaces behind an nginx shield (deploy/nginx-shield.conf) and checks
// that players and a verifying client get exactly the files, cold and warm,
// through an origin crash and a bad deploy. It reports hit ratios and the
// load on each origin.
// needTime fails a step that would start after the test's bound passed,
// which would otherwise run an empty load and report it as the fault.
func needTime(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := ctx.Err(); err != nil {
		t.Fatalf("not started: the test's time bound has passed (%v)", err)
	}
}

func TestShield(t *testing.T) {
	testreq.Slow(t, "three origins in network namespaces behind nginx, players, a crash and a bad deploy (about 40 s)")
	requireTools(t)
	began := time.Now()
	// The bound is for a machine that is slow or loaded (all steps take
	// about 70 s on two busy cores); each step fails on its own when the
	// bound has passed, naming it, rather than reporting an empty load.
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	r := newRig(t)
	t.Logf("topology: shield %s → origins %v in namespaces %v (setup %v)",
		r.shield.base, r.addrs, r.topo.netns, time.Since(began).Round(time.Millisecond))

	reval := "/synth/reval.m3u8"
	revalAt := time.Now()
	if o := r.get(t, reval, ""); o.cache != "MISS" {
		t.Errorf("first GET %s through the shield: X-Cache-Status %q, want MISS", reval, o.cache)
	}
	r.skipLog(t)

	t.Run("validators", r.testValidators)
	t.Run("origin-slices", r.testOriginSlices)
	t.Run("ffmpeg", func(t *testing.T) { r.testFFmpeg(t, ctx) })
	load := r.synthSet(t, "load")
	t.Run("load", func(t *testing.T) { r.testLoad(t, ctx, load) })

	t.Run("revalidate", func(t *testing.T) {
		time.Sleep(time.Until(revalAt.Add(playlistMaxAge + 500*time.Millisecond)))
		o := r.get(t, reval, "")
		lines := r.newLog(t)
		if o.cache != "REVALIDATED" || len(lines) != 1 || lines[0].ustatus != "304" {
			t.Errorf("GET %s after max-age: X-Cache-Status %q, origin status %v; want REVALIDATED after a 304 to the shield's If-None-Match",
				reval, o.cache, lines)
		}
	})
	// Every fetch so far (no faults yet) was an aligned slice.
	t.Run("slice-fetches", func(t *testing.T) {
		all, _ := r.shield.readLog(t, 0)
		checkSliceFetches(t, all)
	})

	t.Run("origin-crash", func(t *testing.T) { needTime(t, ctx); r.testCrash(t, ctx) })
	t.Run("bad-deploy", func(t *testing.T) { needTime(t, ctx); r.testBadDeploy(t, ctx) })
	t.Logf("TestShield ran %v", time.Since(began).Round(100*time.Millisecond))
}

// newRig makes the content, the network, three origins and the shield.
// Cleanups stop them in reverse order, on failure too.
func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	bin := testproc.Build(t, "./cmd/segorigin")
	r := &rig{master: filepath.Join(dir, "master"), client: newClient(8), direct: newClient(4)}
	makeContent(t, r.master)

	// cp -a keeps mtimes, so every copy has the same ETag and
	// Last-Modified: what an rsync -a deploy does.
	r.build(t, bin, dir, cpA, []string{"-cache-control-playlist", fmt.Sprintf("public, max-age=%d", int(playlistMaxAge.Seconds()))})
	return r
}

// build copies r.master to each of three origins with copyTree, starts
// them with args in their network namespaces and the shield in front.
// Cleanups stop them in reverse order, on failure too.
func (r *rig) build(t *testing.T, bin, dir string, copyTree func(t *testing.T, src, dst string), args []string) {
	t.Helper()
	r.topo = newTopology(t, 3)
	for i, ns := range r.topo.netns {
		root := filepath.Join(dir, fmt.Sprintf("origin%d", i+1))
		copyTree(t, r.master, root)
		o := &origin{
			name: fmt.Sprintf("o%d", i+1), bin: bin, ns: ns, root: root, owner: t,
			addr: fmt.Sprintf("%s:%d", r.topo.hosts[i], originPort), args: args,
		}
		r.origins = append(r.origins, o)
		r.addrs = append(r.addrs, o.addr)
		r.labels = append(r.labels, o.name)
	}
	// Registered after the topology's cleanups, so it runs before them;
	// each origin's own cleanup (o.start), registered later, has stopped it
	// by then.
	t.Cleanup(func() {
		for _, o := range r.origins {
			if t.Failed() && o.proc != nil {
				t.Logf("%s (%s) log:\n%s", o.name, o.addr, o.proc.Logs())
			}
		}
	})
	for _, o := range r.origins {
		o.start(t)
	}
	r.shield = startShield(t, filepath.Join(dir, "shield"), r.addrs)
}

// synthSets are the synth file groups under /synth: name, count, and the
// size range. Sizes are never a multiple of 1 MiB except the first of a
// set, so the last slice is usually short.
var synthSets = []struct {
	name     string
	count    int
	min, max int64
}{
	{"load", 10, 2 * mib, 7 * mib / 2}, // cold and warm verified load
	{"crash", 24, 2 * mib, 3 * mib},    // cold load while an origin is killed
	{"after", 12, mib + 1, 2 * mib},    // two slices: the restarted origin's share
	{"bad", 15, 2 * mib, 3 * mib},      // one origin gets a different copy
}

func synthSize(i int, lo, hi int64) int64 {
	if i == 0 {
		return (lo + mib - 1) / mib * mib
	}
	return lo + (int64(i)*917_513)%(hi-lo)
}

// makeContent writes the master tree: the fixture media (cp -a) and the
// synth sets, plus a playlist for the revalidation check.
func makeContent(t *testing.T, master string) {
	t.Helper()
	cpA(t, "../fixtures/media", master)
	for _, s := range synthSets {
		d := filepath.Join(master, "synth", s.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range s.count {
			name := fmt.Sprintf("%s%02d.m4s", s.name, i)
			if err := synth.WriteFile(filepath.Join(d, name), name, synthSize(i, s.min, s.max)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(master, "synth", "reval.m3u8"), synth.Playlist("reval.m3u8", 1024), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cpA copies the tree src to dst with cp -a (mtimes, modes kept).
func cpA(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", src, dst, err, out)
	}
}

// synthSet describes the set name as the origins hold it: names, sizes and
// the ETag from size and mtime (cache.ETag, as segorigin computes it).
func (r *rig) synthSet(t *testing.T, name string) synthSet {
	t.Helper()
	s := synthSet{dir: "/synth/" + name}
	ents, err := os.ReadDir(filepath.Join(r.master, "synth", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		s.files = append(s.files, version{name: e.Name(), size: fi.Size(), etag: cache.ETag(fi.Size(), fi.ModTime())})
	}
	return s
}

// get is one plain GET through the shield, body read and discarded.
func (r *rig) get(t *testing.T, p, rangeHdr string) outcome {
	t.Helper()
	req, _ := http.NewRequest("GET", r.shield.base+p, nil)
	if rangeHdr != "" {
		req.Header.Set("Range", rangeHdr)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", p, err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", p, err)
	}
	return outcome{status: resp.StatusCode, cache: resp.Header.Get("X-Cache-Status"), etag: resp.Header.Get("ETag"), got: n}
}

// newLog returns the access log lines since the last call. nginx writes a
// request's line just after sending its last byte, so a client can be done
// before the line is: wait until the log has not grown for 50 ms.
func (r *rig) newLog(t *testing.T) []logLine {
	t.Helper()
	size := fileSize(t, r.shield.accessLog)
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		n := fileSize(t, r.shield.accessLog)
		if n == size {
			break
		}
		size = n
	}
	lines, off := r.shield.readLog(t, r.logOff)
	r.logOff = off
	return lines
}

func (r *rig) skipLog(t *testing.T) { r.newLog(t) }

// report logs one phase: the client's view and the origins' load.
func (r *rig) report(t *testing.T, phase string, tl *tally, lines []logLine) logStats {
	t.Helper()
	st := summarize(lines)
	if tl != nil {
		t.Logf("%s: client: %v", phase, tl)
	}
	t.Logf("%s: shield: %d slice lookups (%s), slice hit ratio %.0f%%; origin fetches: %s",
		phase, st.lines, st.cacheSummary(), 100*st.hitRatio(), st.perOrigin(r.addrs, r.labels))
	return st
}

// failOutcomes fails the test for every wrong body (always) and, unless
// allowErr says otherwise, every error; a few of each are shown.
func failOutcomes(t *testing.T, phase string, tl *tally, allowErr func(outcome) bool) {
	t.Helper()
	for i, o := range tl.wrong {
		if i < 5 {
			t.Errorf("%s: WRONG BYTES: %s", phase, o.wrong)
		}
	}
	shown := 0
	for _, o := range tl.errors {
		if allowErr != nil && allowErr(o) {
			continue
		}
		if shown < 5 {
			t.Errorf("%s: client error: %v", phase, o.err)
		}
		shown++
	}
	if len(tl.wrong) > 5 || shown > 5 {
		t.Errorf("%s: %d wrong bodies and %d errors in all", phase, len(tl.wrong), shown)
	}
}

// testValidators: every file has the same ETag, Last-Modified, length and
// caching headers on every origin, and the ETag is the one size and mtime
// give (so a cp -a or rsync -a copy agrees with the master).
func (r *rig) testValidators(t *testing.T) {
	files := 0
	err := filepath.WalkDir(r.master, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel := "/" + filepath.ToSlash(must(filepath.Rel(r.master, p)))
		want := cache.ETag(fi.Size(), fi.ModTime())
		var first http.Header
		for i, a := range r.addrs {
			resp, err := r.direct.Head("http://" + a + rel)
			if err != nil {
				t.Fatalf("HEAD %s on %s: %v", rel, r.labels[i], err)
			}
			resp.Body.Close()
			h := resp.Header
			if resp.StatusCode != http.StatusOK || h.Get("ETag") != want || h.Get("Accept-Ranges") != "bytes" {
				t.Errorf("HEAD %s on %s = %d, ETag %s, Accept-Ranges %q; want 200, ETag %s (size+mtime), bytes",
					rel, r.labels[i], resp.StatusCode, h.Get("ETag"), h.Get("Accept-Ranges"), want)
			}
			if first == nil {
				first = h
				continue
			}
			for _, k := range []string{"ETag", "Last-Modified", "Content-Length", "Cache-Control", "Content-Type", "Accept-Ranges", "Vary"} {
				if h.Get(k) != first.Get(k) {
					t.Errorf("HEAD %s: %s is %q on %s but %q on %s", rel, k, h.Get(k), r.labels[i], first.Get(k), r.labels[0])
				}
			}
		}
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files: ETag, Last-Modified, Content-Length, Cache-Control, Content-Type identical on %d origins", files, len(r.addrs))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// testOriginSlices sends each origin the requests a slicing shield sends:
// aligned 1 MiB ranges (the last one short), with If-Range, with a stale
// If-Range, and If-None-Match revalidation of a slice.
func (r *rig) testOriginSlices(t *testing.T) {
	set := r.synthSet(t, "load")
	f := set.files[1] // not a multiple of 1 MiB
	last := (f.size - 1) / mib * mib
	cases := []struct {
		name       string
		hdr        map[string]string
		wantStatus int
		wantFirst  int64 // for 206 and 200
		wantLast   int64
	}{
		{"first slice", map[string]string{"Range": "bytes=0-1048575"}, 206, 0, mib - 1},
		{"middle slice", map[string]string{"Range": "bytes=1048576-2097151"}, 206, mib, 2*mib - 1},
		{"last slice, short", map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", last, last+mib-1)}, 206, last, f.size - 1},
		{"If-Range current ETag", map[string]string{"Range": "bytes=1048576-2097151", "If-Range": f.etag}, 206, mib, 2*mib - 1},
		{"If-Range stale ETag", map[string]string{"Range": "bytes=1048576-2097151", "If-Range": `"0-0"`}, 200, 0, f.size - 1},
		{"If-None-Match revalidation", map[string]string{"Range": "bytes=1048576-2097151", "If-None-Match": f.etag}, 304, 0, -1},
		{"slice past the end", map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", last+mib, last+2*mib-1)}, 416, 0, -1},
	}
	for i, a := range r.addrs {
		for _, c := range cases {
			req, _ := http.NewRequest("GET", "http://"+a+set.path(1), nil)
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			resp, err := r.direct.Do(req)
			if err != nil {
				t.Fatalf("%s on %s: %v", c.name, r.labels[i], err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("%s on %s: body: %v", c.name, r.labels[i], err)
			}
			what := fmt.Sprintf("GET %s %v on %s (%s)", set.path(1), c.hdr, r.labels[i], c.name)
			if resp.StatusCode != c.wantStatus {
				t.Errorf("%s = %d, want %d", what, resp.StatusCode, c.wantStatus)
				continue
			}
			if resp.Header.Get("ETag") != f.etag && c.wantStatus != 416 {
				t.Errorf("%s: ETag %q, want %q", what, resp.Header.Get("ETag"), f.etag)
			}
			switch c.wantStatus {
			case 206:
				want := fmt.Sprintf("bytes %d-%d/%d", c.wantFirst, c.wantLast, f.size)
				if cr := resp.Header.Get("Content-Range"); cr != want {
					t.Errorf("%s: Content-Range %q, want %q", what, cr, want)
				}
			case 416:
				if cr, want := resp.Header.Get("Content-Range"), fmt.Sprintf("bytes */%d", f.size); cr != want {
					t.Errorf("%s: Content-Range %q, want %q", what, cr, want)
				}
			}
			if c.wantLast >= 0 {
				if int64(len(body)) != c.wantLast-c.wantFirst+1 {
					t.Errorf("%s: %d body bytes, want %d", what, len(body), c.wantLast-c.wantFirst+1)
				} else if bad, ok := synth.Verify(f.name, c.wantFirst, body); !ok {
					t.Errorf("%s: wrong byte at offset %d", what, bad)
				}
			}
		}
	}
}

// testFFmpeg plays every fixture stream through the shield, cold then warm,
// and compares every fixture file fetched through the shield with the disk.
func (r *rig) testFFmpeg(t *testing.T, ctx context.Context) {
	play := func(phase string) {
		for _, s := range streams {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			cmd := exec.CommandContext(cctx, "ffmpeg", "-nostdin", "-v", "error", "-xerror",
				"-i", r.shield.base+s, "-map", "0", "-f", "null", "-")
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("%s: ffmpeg -v error -i %s%s: %v\n%s", phase, r.shield.base, s, err, out)
			}
		}
	}
	play("cold")
	r.report(t, "ffmpeg cold", nil, r.newLog(t))

	// Every fixture file, whole, through the shield: the bytes on disk, the
	// origin's ETag.
	files := 0
	err := filepath.WalkDir(r.master, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "/synth/") {
			return err
		}
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		rel := "/" + filepath.ToSlash(must(filepath.Rel(r.master, p)))
		resp, err := r.client.Get(r.shield.base + rel)
		if err != nil {
			return fmt.Errorf("GET %s: %v", rel, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("GET %s: body: %v", rel, err)
		}
		if len(want) == 0 {
			// nginx's slice module asks the origin for bytes=0-1048575;
			// a 0-byte file has no such range, so the origin answers 416
			// (RFC 9110 §14.1.1) and the shield passes that on. An empty
			// media file is no real case; README.md notes it.
			if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable && resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s (0 bytes) through the shield = %d, want 416 (slice of an empty file) or 200", rel, resp.StatusCode)
			}
			return nil
		}
		files++
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) || resp.Header.Get("ETag") != cache.ETag(fi.Size(), fi.ModTime()) {
			t.Errorf("GET %s through the shield = %d, %d bytes (equal to disk: %v), ETag %s; want 200, the %d bytes on disk, ETag %s",
				rel, resp.StatusCode, len(got), bytes.Equal(got, want), resp.Header.Get("ETag"), len(want), cache.ETag(fi.Size(), fi.ModTime()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d fixture files fetched whole through the shield: bytes and ETag as on disk", files)
	r.skipLog(t)

	play("warm")
	lines := r.newLog(t)
	r.report(t, "ffmpeg warm", nil, lines)
	for _, l := range lines {
		if p := l.path(); len(l.upstream) > 0 && !strings.HasSuffix(p, ".m3u8") && !strings.HasSuffix(p, ".mpd") {
			t.Errorf("ffmpeg warm: the shield fetched segment %s (%s) from %v again; want a hit", p, l.ucr, l.upstream)
		}
	}
}

// testLoad runs a verifying load over the load set, cold then warm.
func (r *rig) testLoad(t *testing.T, ctx context.Context, set synthSet) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := &load{client: r.client, base: r.shield.base, workers: 6}
	for _, phase := range []string{"cold", "warm"} {
		// The whole files first, so that after the cold phase every
		// slice of every file is cached.
		reqs := append(set.wholeAll(), set.mix(rng, 100)...)
		var tl tally
		for _, o := range l.run(ctx, reqs) {
			tl.add(o)
		}
		st := r.report(t, "load "+phase, &tl, r.newLog(t))
		failOutcomes(t, "load "+phase, &tl, nil)
		if tl.requests != len(reqs) {
			t.Errorf("load %s: %d of %d requests ran before the deadline", phase, tl.requests, len(reqs))
		}
		fetched := 0
		for _, n := range st.fetches {
			fetched += n
		}
		if phase == "cold" && fetched != set.slices() {
			t.Errorf("load cold: the shield made %d origin fetches for the %d slices of the set; want each slice fetched exactly once (proxy_cache_lock)",
				fetched, set.slices())
		}
		if phase == "warm" && fetched > 0 {
			t.Errorf("load warm: the shield fetched from the origins %s; want every slice cached by the cold phase",
				st.perOrigin(r.addrs, r.labels))
		}
	}
}
