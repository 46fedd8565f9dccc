package origin_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"segorigin/internal/slowfs"
	"segorigin/origin"
)

// The cold-read tests serve a root mounted through slowfs, whose reads the
// test holds at a gate: a held read is a disk that does not answer, so
// each test proves by behaviour what a stalled disk does to the server.

// coldRig writes n synth segments of size bytes and a playlist into a
// backing directory, mounts it through slowfs and makes the playlist (only)
// resident.
func coldRig(t *testing.T, n int, size int64) *slowfs.FS {
	t.Helper()
	backing := t.TempDir()
	for i := range n {
		writeSynth(t, backing, fmt.Sprintf("v/seg%04d.ts", i), size)
	}
	writeFile(t, backing, "v/index.m3u8", playlistFor(n))
	f := slowfs.MountT(t, backing, 0)
	if _, err := os.ReadFile(filepath.Join(f.Dir(), "v/index.m3u8")); err != nil {
		t.Fatal(err)
	}
	return f
}

func playlistFor(n int) string {
	var b bytes.Buffer
	b.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n")
	for i := range n {
		fmt.Fprintf(&b, "#EXTINF:4.0,\nseg%04d.ts\n", i)
	}
	b.WriteString("#EXT-X-ENDLIST\n")
	return b.String()
}

// rawGet is a GET on a fresh connection that reports errors instead of
// failing the test, for use from many goroutines.
func rawGet(addr, target string) (*http.Response, []byte, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", target); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// coldResult is a response a goroutine of the test waited for.
type coldResult struct {
	resp *http.Response
	body []byte
	err  error
}

// mustAllOK receives n results and checks each is a 200 of size bytes.
func mustAllOK(t *testing.T, results <-chan coldResult, n int, size int64, what string) {
	t.Helper()
	for range n {
		res := <-results
		if res.err != nil || res.resp.StatusCode != 200 || int64(len(res.body)) != size {
			t.Errorf("%s: %v, %d bytes, err %v; want 200 with %d bytes", what, res.resp, len(res.body), res.err, size)
		}
	}
}

// osThreads counts this process's OS threads.
func osThreads(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("cannot count threads: %v", err)
	}
	return len(ents)
}

// coldBurst sends one GET per segment, each on its own connection, and
// returns a wait function for their results.
func coldBurst(ts *testServer, n int, size int64) func() []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("seg%04d.ts", i)
			resp, body, err := rawGet(ts.addr, "/v/"+name)
			switch {
			case err != nil:
				errs[i] = err
			case resp.StatusCode != 200:
				errs[i] = fmt.Errorf("%s: status %d", name, resp.StatusCode)
			case !bytes.Equal(body, synthBytes(name, 0, size)):
				errs[i] = fmt.Errorf("%s: %d bytes differ from the file's %d", name, len(body), size)
			}
		})
	}
	return func() []error { wg.Wait(); return errs }
}

// TestColdBurstKeepsThreadsBoundedAndPlaylistsServed: with every cold
// reader stalled on a disk that does not answer and hundreds of cold
// requests waiting, the process holds no more threads than GOMAXPROCS, the
// readers and a constant, and a playlist in the page cache is still
// answered. Without the pool (ColdReaders 0) the same burst holds a thread
// per request on the fasthttp engine: that half shows the rig really
// stalls sendfile (the loop engine without the pool would stall its loops
// instead, as nginx without aio stalls its workers).
func TestColdBurstKeepsThreadsBoundedAndPlaylistsServed(t *testing.T) {
	const n, size, readers = 200, 64 << 10, 4
	for _, tc := range []struct {
		name    string
		readers int
	}{{"pool", readers}, {"no pool", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			f := coldRig(t, n, size)
			ts := startServer(t, f.Dir(), func(c *origin.Config) {
				c.ColdReaders, c.ColdQueue, c.ColdDeadline = tc.readers, n, time.Minute
				c.ReadAhead.Readers = 0 // the pool alone
				c.Watch = false
				if tc.readers == 0 {
					c.Engine = origin.EngineFastHTTP
				} else {
					// One loop: the playlist below is answered by the
					// very loop that serves the stalled requests, so a
					// loop that waited for storage could not answer it.
					c.Loops = 1
				}
			})
			mustBody(t, ts.get("/v/index.m3u8"), []byte(playlistFor(n)), "playlist before the burst")
			base := osThreads(t)
			f.Hold()
			defer f.Open()
			wait := coldBurst(ts, n, size)
			cold := func() origin.ColdStats { return ts.srv.Stats().Cold }
			if tc.readers > 0 {
				waitFor(t, 10*time.Second, "every request waiting for a reader", func() bool { return cold().Waited == n })
				// One reader is kept for playlists: the others stall.
				waitFor(t, 10*time.Second, "every segment reader stalled on the disk", func() bool { return origin.ColdReadersBusy(ts.srv) == readers-1 })
			} else {
				if err := f.AwaitWaiting(1, 10*time.Second); err != nil {
					t.Fatal(err)
				}
				// Each stalled sendfile holds its thread: wait for most
				// of them (bounded), proving the rig blocks a thread.
				waitFor(t, 10*time.Second, "a thread per stalled request", func() bool { return osThreads(t) > n/2 })
			}
			threads := osThreads(t)
			// The playlist is resident: it must be served while the disk
			// stalls, whatever the pool does.
			t0 := time.Now()
			resp, body, err := rawGet(ts.addr, "/v/index.m3u8")
			if err != nil || resp.StatusCode != 200 || string(body) != playlistFor(n) {
				t.Fatalf("playlist during the cold burst: %v, err %v", resp, err)
			}
			t.Logf("resident playlist answered in %v with every cold reader held", time.Since(t0))
			// bound: the readers, as many opens (cache misses), go-fuse's
			// readers blocked in read(2) on /dev/fuse (at most 16),
			// GOMAXPROCS and a constant.
			bound := base + 2*tc.readers + 16 + runtime.GOMAXPROCS(0) + 8
			t.Logf("threads: %d before the burst, %d with %d cold requests stalled (bound with the pool %d)", base, threads, n, bound)
			if tc.readers > 0 && threads > bound {
				t.Errorf("threads with %d stalled cold requests = %d, want <= %d", n, threads, bound)
			}
			f.Open()
			for _, err := range wait() {
				if err != nil {
					t.Fatalf("cold request after the disk answered: %v", err)
				}
			}
		})
	}
}

// TestColdQueueFullAnswers503: past the queue bound a cold request is
// answered at once with 503 and Retry-After (RFC 9110 §15.6.4, §10.2.3)
// and without the 206/200's validators or Content-Range; the requests
// queued still get their bytes.
func TestColdQueueFullAnswers503(t *testing.T) {
	const size = 64 << 10
	f := coldRig(t, 3, size)
	ts := startServer(t, f.Dir(), func(c *origin.Config) {
		c.ColdReaders, c.ColdQueue, c.ColdDeadline = 1, 1, time.Minute
		c.ReadAhead.Readers = 0
		c.Watch = false
	})
	f.Hold()
	defer f.Open()
	results := make(chan coldResult, 2)
	for i := range 2 {
		go func() {
			r, b, err := rawGet(ts.addr, fmt.Sprintf("/v/seg%04d.ts", i))
			results <- coldResult{r, b, err}
		}()
		want := int64(i + 1)
		waitFor(t, 10*time.Second, "request queued", func() bool { return ts.srv.Stats().Cold.Waited == want })
	}
	r := ts.get("/v/seg0002.ts", "Range: bytes=0-99")
	mustStatus(t, r, 503, "cold request with the reader busy and the queue full")
	if ra := r.header("Retry-After"); ra < "1" || ra > "3" || len(ra) != 1 {
		t.Errorf("503: Retry-After %q, want 1, 2 or 3", ra)
	}
	for _, h := range []string{"Content-Range", "ETag", "Last-Modified"} {
		mustHeader(t, r, h, "", "503")
	}
	mustBody(t, ts.get("/v/index.m3u8"), []byte(playlistFor(3)), "resident playlist while the queue is full")
	f.Open()
	mustAllOK(t, results, 2, size, "queued cold request")
	if got := ts.srv.Stats().Cold.Refused; got != 1 {
		t.Errorf("Cold.Refused = %d, want 1", got)
	}
}

// TestColdDeadlineAnswers503: a request that waits past -cold-deadline for
// a disk that does not answer gets 503, not a hung connection.
func TestColdDeadlineAnswers503(t *testing.T) {
	const n = 40
	f := coldRig(t, n, 64<<10)
	ts := startServer(t, f.Dir(), func(c *origin.Config) {
		c.ColdReaders, c.ColdQueue, c.ColdDeadline = 1, 4, time.Millisecond
		c.ReadAhead.Readers = 0
		c.Watch = false
	})
	f.Hold()
	defer f.Open()
	// RFC 9110 §10.2.3: Retry-After "indicate[s] how long the user agent
	// ought to wait before making a follow-up request". Spread over 1-3 s,
	// so that clients refused together do not all retry together. A
	// file each: a second request for the one in flight would join that
	// read instead.
	seen := map[string]int{}
	for i := range n {
		r := ts.get(fmt.Sprintf("/v/seg%04d.ts", i))
		mustStatus(t, r, 503, "cold request past the deadline")
		seen[r.header("Retry-After")]++
	}
	for v := range seen {
		if v != "1" && v != "2" && v != "3" {
			t.Errorf("503: Retry-After %q, want 1, 2 or 3 (seconds)", v)
		}
	}
	if len(seen) < 2 {
		t.Errorf("%d 503s: Retry-After values %v, want them spread over 1-3 s", n, seen)
	}
}

// TestHungOpensAnswer503: opens that hang (a network file system gone
// away) hold only their own requests. A request waiting for a turn among
// the opens in progress (at most -cold-readers), and one waiting for
// another request's open of the same file, get 503 with Retry-After once
// -cold-deadline passes; the hung opens are answered when storage is back.
func TestHungOpensAnswer503(t *testing.T) { everyMode(t, testHungOpensAnswer503) }

func testHungOpensAnswer503(t *testing.T, mode serverMode) {
	const size = 64 << 10
	f := coldRig(t, 3, size)
	ts := mode.start(t, f.Dir(), func(c *origin.Config) {
		c.ColdReaders, c.ColdDeadline = 2, 200*time.Millisecond
		c.ReadAhead.Readers = 0
		c.Watch = false
	})
	f.HoldOpens()
	defer f.ReleaseOpens()
	results := make(chan coldResult, 2)
	for i := range 2 {
		c := ts.dial()
		c.write("GET", fmt.Sprintf("/v/seg%04d.ts", i))
		go func() {
			resp, err := http.ReadResponse(c.br, nil)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
			}
			results <- coldResult{resp, body, err}
		}()
	}
	waitFor(t, 10*time.Second, "two opens hung", func() bool { return f.OpensWaiting() == 2 })
	for _, tt := range []struct{ target, what string }{
		{"/v/seg0002.ts", "waiting for a turn to open"},
		{"/v/seg0000.ts", "waiting for another request's open of the file"},
	} {
		r := ts.get(tt.target)
		mustStatus(t, r, 503, tt.what)
		if ra := r.header("Retry-After"); ra != "1" && ra != "2" && ra != "3" {
			t.Errorf("%s: Retry-After %q, want 1, 2 or 3", tt.what, ra)
		}
	}
	f.ReleaseOpens()
	mustAllOK(t, results, 2, size, "request whose open hung")
	mustBody(t, ts.get("/v/seg0002.ts"), synthBytes("seg0002.ts", 0, size), "after storage came back")
	if got := ts.srv.Stats().Cold.Refused; got != 2 {
		t.Errorf("Cold.Refused = %d, want 2", got)
	}
}

// TestResidentSkipsPoolAndLongBodiesGoByWindow: a resident file is sent
// without a cold read; a cold body longer than one window is made
// resident window by window and arrives intact.
func TestResidentSkipsPoolAndLongBodiesGoByWindow(t *testing.T) {
	const size = 9 << 20 // three 4 MiB windows
	f := coldRig(t, 1, size)
	ts := startServer(t, f.Dir(), func(c *origin.Config) { c.Watch = false })
	cold := func() origin.ColdStats { return ts.srv.Stats().Cold }
	mustBody(t, ts.get("/v/index.m3u8"), []byte(playlistFor(1)), "resident playlist")
	if got := cold().Waited; got != 0 {
		t.Errorf("Cold.Waited after a resident playlist = %d, want 0", got)
	}
	r := ts.get("/v/seg0000.ts")
	mustStatus(t, r, 200, "cold 9 MiB segment")
	mustBody(t, r, synthBytes("seg0000.ts", 0, size), "cold 9 MiB segment")
	if got := cold().Waited; got < 2 {
		t.Errorf("Cold.Waited after a cold 9 MiB body = %d, want >= 2 (its windows)", got)
	}
	before := cold().Waited
	r = ts.get("/v/seg0000.ts", "Range: bytes=100-199")
	mustStatus(t, r, 206, "resident range")
	mustBody(t, r, synthBytes("seg0000.ts", 100, 100), "resident range")
	if got := cold().Waited; got != before {
		t.Errorf("Cold.Waited after a resident range = %d, want %d (no cold read)", got, before)
	}
}
