package origin_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testreq"
	"segorigin/origin"
)

// freshness is the bound within which a request made after a change sees
// it. The watcher's event arrives in well under a millisecond here; the
// bound leaves room for a loaded CI machine.
const freshness = 500 * time.Millisecond

// TestReplaceByRenameUnderLoad: a segment replaced by atomic rename while
// clients download it: every response is wholly the old file or wholly the
// new one, and requests started after the rename (plus the freshness bound)
// get the new one. The phases wait on what they need (old responses from
// every client before the rename, then responses to requests started past
// the bound), not on wall-clock windows a loaded machine may miss.
func TestReplaceByRenameUnderLoad(t *testing.T) {
	ts := startServer(t, "", nil)
	const clients, oldSize, newSize = 6, 1 << 20, 3 << 19
	p := filepath.Join(ts.root, "live", "seg.m4s")
	if err := synth.WriteFile(p, "old", oldSize); err != nil {
		t.Fatal(err)
	}
	oldBody, newBody := synthBytes("old", 0, oldSize), synthBytes("new", 0, newSize)
	var renamedAt atomic.Int64
	var olds, news, late, lateOld atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	// The clients are this test's: stop ends them (also when a wait below
	// fails the test).
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	defer stop()
	for range clients {
		wg.Go(func() {
			c := ts.dial()
			for {
				select {
				case <-done:
					return
				default:
				}
				started := time.Now().UnixNano()
				r := c.do("GET", "/live/seg.m4s")
				ra := renamedAt.Load()
				isLate := ra != 0 && started > ra+int64(freshness)
				switch {
				case bytes.Equal(r.body, oldBody):
					olds.Add(1)
					if isLate {
						lateOld.Add(1)
					}
				case bytes.Equal(r.body, newBody):
					news.Add(1)
				default:
					t.Errorf("response of %d bytes is neither wholly old nor wholly new (Content-Length %s)", len(r.body), r.header("Content-Length"))
					return
				}
				if isLate {
					late.Add(1)
				}
			}
		})
	}
	waitFor(t, 60*time.Second, fmt.Sprintf("%d old responses before the rename", 2*clients), func() bool { return olds.Load() >= 2*clients })
	tmp := p + ".tmp"
	if err := synth.WriteFile(tmp, "new", newSize); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	renamedAt.Store(time.Now().UnixNano())
	waitFor(t, 60*time.Second, fmt.Sprintf("%d responses to requests started %v after the rename", 2*clients, freshness),
		func() bool { return late.Load() >= 2*clients })
	stop()
	t.Logf("old responses %d, new responses %d, started past the bound %d", olds.Load(), news.Load(), late.Load())
	if news.Load() == 0 || olds.Load() == 0 {
		t.Errorf("want both old and new responses, got old %d new %d", olds.Load(), news.Load())
	}
	if n := lateOld.Load(); n > 0 {
		t.Errorf("%d requests started more than %v after the rename got the old file", n, freshness)
	}
}

// TestDeleteAndCreate: a deleted file answers 404 after the event; a
// directory a packager creates later (mkdir -p) is served; a file that was
// missing (and remembered as missing) is served once created, long before
// the negative entry would expire.
func TestDeleteAndCreate(t *testing.T) {
	ts := startServer(t, "", func(c *origin.Config) { c.NegativeTTL = time.Hour })
	writeFile(t, ts.root, "a/seg1.ts", "one")
	mustStatus(t, ts.get("/a/seg1.ts"), 200, "before delete")
	if err := os.Remove(filepath.Join(ts.root, "a/seg1.ts")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, freshness, "404 after delete", func() bool { return ts.get("/a/seg1.ts").StatusCode == 404 })

	mustStatus(t, ts.get("/live/x/y/seg7.ts"), 404, "before the packager writes it")
	writeFile(t, ts.root, "live/x/y/seg7.ts", "seven") // MkdirAll: a mkdir -p burst
	waitFor(t, freshness, "new nested directory served", func() bool { return ts.get("/live/x/y/seg7.ts").StatusCode == 200 })
	writeFile(t, ts.root, "live/x/y/seg8.ts", "eight")
	waitFor(t, freshness, "second file in the new directory", func() bool { return ts.get("/live/x/y/seg8.ts").StatusCode == 200 })

	// A directory renamed into the root is watched at once too.
	staging := t.TempDir()
	writeFile(t, staging, "title/seg1.ts", "staged")
	if err := os.Rename(filepath.Join(staging, "title"), filepath.Join(ts.root, "title")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, freshness, "directory renamed in", func() bool { return ts.get("/title/seg1.ts").StatusCode == 200 })
	writeFile(t, ts.root, "title/seg2.ts", "later")
	waitFor(t, freshness, "file created in renamed-in directory", func() bool { return ts.get("/title/seg2.ts").StatusCode == 200 })
}

// TestFDCap: 20,000 distinct files through a cache of 1,000: the open
// descriptors stay under the cap.
func TestFDCap(t *testing.T) {
	testreq.Slow(t, "20,000 files, each requested (about 25 s)")
	ts := startServer(t, "", func(c *origin.Config) { c.CacheFiles = 1000 })
	const files = 20_000
	for i := range files {
		d := filepath.Join(ts.root, fmt.Sprintf("d%02d", i%100))
		if i < 100 {
			os.MkdirAll(d, 0o755)
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.m4s", i)), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := countFDs(t)
	var wg sync.WaitGroup
	var maxFDs atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			c := ts.dial()
			for i := w; i < files; i += 4 {
				// 5,000 requests on one connection: dial's 60 s is per
				// request here, so a loaded machine cannot expire it.
				c.conn.SetDeadline(time.Now().Add(60 * time.Second))
				r := c.do("GET", fmt.Sprintf("/d%02d/f%05d.m4s", i%100, i))
				if r.StatusCode != 200 || len(r.body) != 1 || r.body[0] != byte(i) {
					t.Errorf("file %d: status %d body %v", i, r.StatusCode, r.body)
					return
				}
				if i%500 == w {
					if n := int64(countFDs(t)); n > maxFDs.Load() {
						maxFDs.Store(n)
					}
				}
			}
		})
	}
	wg.Wait()
	st := ts.srv.CacheStats()
	t.Logf("max open fds %d (baseline %d), cache: %+v", maxFDs.Load(), base, st)
	if st.OpenFiles > 1000 {
		t.Errorf("cache holds %d open files, cap 1000", st.OpenFiles)
	}
	if n := maxFDs.Load(); n > int64(base)+1000+16 {
		t.Errorf("process had %d fds open, want at most baseline %d + 1000 cached + a few in flight", n, base)
	}
	if st.Evictions < files-1000 {
		t.Errorf("evictions %d, want >= %d", st.Evictions, files-1000)
	}
}

// TestManyRequestsWithAborts: 100,000 requests, a share of clients aborting
// mid-body: at the end no descriptor, file reference or goroutine is left.
func TestManyRequestsWithAborts(t *testing.T) {
	testreq.Slow(t, "100,000 requests (about 45 s)")
	ts := startServer(t, "", func(c *origin.Config) { c.CacheFiles = 64 })
	for i := range 100 {
		writeSynth(t, ts.root, fmt.Sprintf("s/%02d.m4s", i), int64(1024+i*37))
	}
	writeSynth(t, ts.root, "big.mp4", 8<<20)
	baseFDs := countFDs(t)
	const total, workers = 100_000, 8
	var done, aborted atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
			defer tr.CloseIdleConnections()
			cl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			for i := w; i < total; i += workers {
				if i%1000 == 7 {
					abortMidBody(t, ts.addr)
					aborted.Add(1)
					continue
				}
				name := fmt.Sprintf("%02d.m4s", i%100)
				resp, err := cl.Get("http://" + ts.addr + "/s/" + name)
				if err != nil {
					t.Errorf("GET %s: %v", name, err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if _, ok := synth.Verify(name, 0, body); !ok || len(body) != 1024+(i%100)*37 {
					t.Errorf("GET %s: %d bytes, bad content", name, len(body))
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d verified responses, %d aborted downloads", done.Load(), aborted.Load())
	waitFor(t, 10*time.Second, "cached files only, no in-flight references", func() bool {
		st := ts.srv.CacheStats()
		return st.OpenFiles <= int64(st.Entries)
	})
	waitFor(t, 10*time.Second, "no goroutine serving a connection", func() bool { return servingGoroutines() == "" })
	waitFor(t, 5*time.Second, "descriptors back to baseline", func() bool { return countFDs(t) <= baseFDs+64 })
}

// abortMidBody starts a large download and resets the connection after a
// few kilobytes.
func abortMidBody(t *testing.T, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Errorf("dial: %v", err)
		return
	}
	fmt.Fprintf(c, "GET /big.mp4 HTTP/1.1\r\nHost: t\r\n\r\n")
	io.ReadFull(c, make([]byte, 4096))
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
}
