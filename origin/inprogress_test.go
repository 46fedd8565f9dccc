package origin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/internal/slowfs"
	"segorigin/origin"
)

// publishServer is one server of TestInProgressNotPublished and the
// client that polls it.
type publishServer struct {
	name     string
	ts       *testServer
	uncached bool
	tlsMode  *tlsMode // over TLS: checkTLSPaths at the end
}

// fetched is one poll's answer, kept for the checks after the write.
type fetched struct {
	status     int
	cc, retry  string
	body       []byte
	contentLen string
	err        error
}

// TestInProgressNotPublished writes a 2 MiB segment in place at about
// 1 MB/s while a client polls it every 20 ms on servers in every mode
// (loop, fasthttp, each TLS mode), one with -in-progress uncached, and one
// started in the middle of the write (a restart: it saw no event, so only
// the file's dates tell). No answer may carry fewer bytes than the final
// size under a cacheable Cache-Control; once the file settles each server
// answers 200 with the segment rule and the final bytes.
func TestInProgressNotPublished(t *testing.T) {
	const (
		size   = 2 << 20
		chunk  = 20 << 10 // every 20 ms: ~1 MB/s
		settle = time.Second
		rel    = "pub/seg1.ts"
	)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "pub"), 0o755); err != nil {
		t.Fatal(err)
	}
	final := synthBytes("seg1.ts", 0, size)
	mod := func(uncached bool) func(*origin.Config) {
		return func(c *origin.Config) {
			c.Settle = settle
			if uncached {
				c.InProgress = origin.InProgressUncached
			}
		}
	}
	var servers []*publishServer
	for _, m := range []serverMode{{engine: origin.EngineLoop}, {engine: origin.EngineFastHTTP}} {
		servers = append(servers, &publishServer{name: "HTTP-" + string(m.engine), ts: m.start(t, root, mod(false))})
	}
	for i := range tlsModes {
		m := &tlsModes[i]
		servers = append(servers, &publishServer{name: m.name, ts: startServerMode(t, root, mod(false), m), tlsMode: m})
	}
	servers = append(servers, &publishServer{name: "uncached", ts: startServer(t, root, mod(true)), uncached: true})

	// The pollers end at their first cacheable 200 (the file settled), or
	// when ctx ends.
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	var wg sync.WaitGroup
	answers := make([][]fetched, len(servers)+1)
	poll := func(i int, ps *publishServer) {
		wg.Go(func() {
			c := ps.ts.httpClient()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for n := 0; n < 1500; n++ { // 30 s at most
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				r := fetch(c, ps.ts, "/"+rel)
				answers[i] = append(answers[i], r)
				if r.err == nil && r.status == http.StatusOK && r.cc != "no-store" {
					return
				}
			}
		})
	}
	for i, ps := range servers {
		poll(i, ps)
	}

	f, err := os.OpenFile(filepath.Join(root, rel), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var maxGap time.Duration
	last := start
	for i, off := 0, 0; off < size; i, off = i+1, off+chunk {
		if off == size/2 {
			// A server started now knows nothing of the write so far.
			rs := &publishServer{name: "restarted", ts: startServer(t, root, mod(false))}
			servers = append(servers, rs)
			poll(len(servers)-1, rs)
		}
		// Paced by the clock, not by sleeps, so a slow start-up above
		// does not stretch the write.
		time.Sleep(time.Until(start.Add(time.Duration(i) * 20 * time.Millisecond)))
		if _, err := f.Write(final[off:min(off+chunk, size)]); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		maxGap = max(maxGap, now.Sub(last))
		last = now
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	wg.Wait()
	if maxGap >= settle {
		t.Fatalf("the writer paused %v between two writes, longer than -settle %v: the machine was too busy for this test to judge", maxGap, settle)
	}
	t.Logf("wrote %d bytes in %v (longest pause %v), all settled %v later", size, written.Sub(start).Round(time.Millisecond),
		maxGap.Round(time.Millisecond), time.Since(written).Round(time.Millisecond))

	for i, ps := range servers {
		if len(answers[i]) == 0 {
			t.Errorf("%s: no answer", ps.name)
			continue
		}
		r := answers[i][len(answers[i])-1]
		switch {
		case r.status != http.StatusOK:
			t.Errorf("%s: last answer %d (err %v), want 200 once settled", ps.name, r.status, r.err)
		case r.cc != "public, max-age=31536000, immutable":
			t.Errorf("%s: settled Cache-Control = %q, want the segment rule", ps.name, r.cc)
		case !bytes.Equal(r.body, final):
			t.Errorf("%s: settled body: %d bytes, differs from the file (%d bytes) at %d", ps.name, len(r.body), size, firstDiff(r.body, final))
		}
		var refused, partial int
		for _, r := range answers[i] {
			if r.err != nil {
				t.Errorf("%s: %v", ps.name, r.err)
				continue
			}
			cacheable := r.cc != "no-store"
			switch {
			case cacheable && (r.status != http.StatusOK || !bytes.Equal(r.body, final)):
				t.Errorf("%s: status %d, %d bytes, Cache-Control %q: a cacheable answer that is not the whole file", ps.name, r.status, len(r.body), r.cc)
			case r.status == http.StatusServiceUnavailable:
				refused++
				if ps.uncached {
					t.Errorf("%s: 503 with -in-progress uncached", ps.name)
				}
				if r.retry == "" {
					t.Errorf("%s: 503 without Retry-After", ps.name)
				}
			case r.status == http.StatusOK && !cacheable:
				partial++
				if !ps.uncached {
					t.Errorf("%s: 200 with no-store (%d bytes), want 503 while in progress", ps.name, len(r.body))
				}
				if !bytes.Equal(r.body, final[:len(r.body)]) || r.contentLen != fmt.Sprint(len(r.body)) {
					t.Errorf("%s: uncached body of %d bytes (Content-Length %s) is not the file's first bytes", ps.name, len(r.body), r.contentLen)
				}
			case r.status != http.StatusOK:
				t.Errorf("%s: status %d while polling", ps.name, r.status)
			}
		}
		if refused+partial < 10 {
			t.Errorf("%s: %d answers while in progress (%d polls), want at least 10", ps.name, refused+partial, len(answers[i]))
		}
		if got := ps.ts.srv.Stats().InProgress; got < int64(refused+partial) {
			t.Errorf("%s: InProgress counter %d, want at least %d", ps.name, got, refused+partial)
		}
		if ps.tlsMode != nil {
			checkTLSPaths(t, ps.ts, *ps.tlsMode)
		}
	}
}

// httpClient is a keep-alive client of ts (HTTPS when ts is).
func (ts *testServer) httpClient() *http.Client {
	tr := &http.Transport{TLSClientConfig: ts.tls, DisableCompression: true, MaxIdleConnsPerHost: 1}
	ts.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// fetch GETs target from ts and reads the whole answer.
func fetch(c *http.Client, ts *testServer, target string) fetched {
	scheme := "http"
	if ts.tls != nil {
		scheme = "https"
	}
	resp, err := c.Get(scheme + "://" + ts.addr + target)
	if err != nil {
		return fetched{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return fetched{status: resp.StatusCode, cc: resp.Header.Get("Cache-Control"), retry: resp.Header.Get("Retry-After"),
		contentLen: resp.Header.Get("Content-Length"), body: body, err: err}
}

// TestClosedFileServedAtOnce: a segment written whole and closed just now
// (well within -settle) is served at once, because the kernel says no
// process has it open for writing; the same file held open by a writer
// is still in progress (503, no-store), whatever its dates, until the
// writer closes it. On both engines.
func TestClosedFileServedAtOnce(t *testing.T) {
	for _, engine := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(engine), func(t *testing.T) {
			ts := startServer(t, "", func(c *origin.Config) {
				c.Engine = engine
				c.Settle = time.Hour // the dates alone would hold it back for the whole test
			})
			body := synthBytes("fresh.ts", 0, 100_000)
			p := filepath.Join(ts.root, "fresh.ts")
			if err := os.WriteFile(p, body, 0o644); err != nil {
				t.Fatal(err)
			}
			c := ts.dial()
			r := c.do("GET", "/fresh.ts")
			mustStatus(t, r, 200, "a segment written and closed just now")
			if !bytes.Equal(r.body, body) {
				t.Fatalf("body of %d bytes differs from the file", len(r.body))
			}
			if cc := r.header("Cache-Control"); cc == "no-store" || cc == "" {
				t.Errorf("Cache-Control %q, want the segment rule", cc)
			}
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// Every request for a file written within -settle is judged
			// again, a cache hit too.
			waitFor(t, 10*time.Second, "503 while a writer holds the file", func() bool {
				r := c.do("GET", "/fresh.ts")
				return r.StatusCode == 503 && r.header("Cache-Control") == "no-store" && r.header("Retry-After") != ""
			})
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r = c.do("GET", "/fresh.ts")
			mustStatus(t, r, 200, "the same file once its writer closed it")
			if !bytes.Equal(r.body, body) {
				t.Fatalf("body of %d bytes differs from the file", len(r.body))
			}
		})
	}
}

// TestInProgressSuspendedStepRunsOnce: on the event loop a request whose
// file is a cache hit but whose first window is not resident suspends at
// the cold step and resumes there on a goroutine. The steps before it
// (the settle rule among them) must not run again: with -in-progress
// uncached a file in progress is counted once and its entry dropped
// once: the resumed request keeps the file it found rather than opening it
// a second time. The file sits behind slowfs (not resident until read);
// the server's clock decides whether it has settled.
func TestInProgressSuspendedStepRunsOnce(t *testing.T) {
	backing := t.TempDir()
	writeSynth(t, backing, "v/seg.ts", 512<<10)
	fs := slowfs.MountT(t, backing, 0)
	var clock atomic.Int64 // unix nanoseconds the server reads as now
	clock.Store(time.Now().Add(time.Hour).UnixNano())
	ts := startServer(t, fs.Dir(), func(c *origin.Config) {
		c.Settle = time.Minute
		c.InProgress = origin.InProgressUncached
		c.ReadAhead.Readers = 0 // nothing but the request reads the file
		c.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	// Settled an hour from now: opened and listed by the cache. HEAD
	// reads no byte, so the file stays cold.
	mustStatus(t, ts.do("HEAD", "/v/seg.ts"), http.StatusOK, "HEAD while settled")
	before, dropped := ts.srv.Stats().InProgress, ts.srv.CacheStats().Invalidations

	// Back to the present: the file changed a moment ago and a writer
	// holds it open, in progress.
	w, err := os.OpenFile(filepath.Join(fs.Dir(), "v/seg.ts"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	clock.Store(time.Now().UnixNano())
	r := ts.get("/v/seg.ts")
	mustStatus(t, r, http.StatusOK, "GET in progress")
	mustHeader(t, r, "Cache-Control", "no-store", "GET in progress")
	mustBody(t, r, synthBytes("seg.ts", 0, 512<<10), "GET in progress")
	if got := ts.srv.Stats().InProgress - before; got != 1 {
		t.Errorf("InProgress counted %d times for one request, want 1", got)
	}
	// A second drop would be of an entry the request itself opened again:
	// planned a second time from the start.
	if got := ts.srv.CacheStats().Invalidations - dropped; got != 1 {
		t.Errorf("the file's entry was dropped %d times for one request, want 1", got)
	}
}

// TestPausedWriterNotPublished: a segment written in place whose writer
// pauses longer than -settle, the file still open, is not published: the
// kernel says a writer holds it (a read lease is refused), so it is
// answered 503 with no-store, never cacheable bytes of half a file. Once
// the writer closes it, it is served whole with the segment's
// Cache-Control.
func TestPausedWriterNotPublished(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "v"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, root, func(c *origin.Config) { c.Settle = 200 * time.Millisecond })
	final := synthBytes("seg.ts", 0, 200_000)
	w, err := os.Create(filepath.Join(root, "v", "seg.ts"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(final[:100_000]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the writer pauses: longer than -settle
	r := ts.get("/v/seg.ts")
	mustStatus(t, r, http.StatusServiceUnavailable, "a file whose writer paused with it open")
	mustHeader(t, r, "Cache-Control", "no-store", "a file whose writer paused with it open")
	if _, err := w.Write(final[100_000:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the closed file published", func() bool {
		r = ts.get("/v/seg.ts")
		return r.StatusCode == http.StatusOK
	})
	mustBody(t, r, final, "the closed file")
	mustHeader(t, r, "Cache-Control", "public, max-age=31536000, immutable", "the closed file")
}
