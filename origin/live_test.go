package origin_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"segorigin/fixtures/llpack"
	"segorigin/internal/testwait"
	"segorigin/origin"
)

// Low-Latency HLS delivery directives (draft-pantos-hls-rfc8216bis
// §6.2.5) over a test packager's output, on every transport.

// startPackager makes a packager writing live/live.m3u8 under root and
// publishes parts parts.
func startPackager(t testing.TB, root string, cfg llpack.Config, parts int) *llpack.Packager {
	t.Helper()
	cfg.Dir = filepath.Join(root, "live")
	p, err := llpack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range parts {
		if err := p.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// blockingTarget is the request for the part the packager publishes next.
func blockingTarget(p *llpack.Packager) string {
	msn, part := p.Next()
	return fmt.Sprintf("/live/live.m3u8?_HLS_msn=%d&_HLS_part=%d", msn, part)
}

// TestLiveBlockingReload: a request for the next part waits (it is parked:
// the server counts it) and is answered with the playlist that lists the
// part as soon as the packager renames it in (§6.2.5.2), with the
// blocking reload's Cache-Control.
func TestLiveBlockingReload(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, nil)
		p := startPackager(t, root, llpack.Config{TargetDuration: 2, Parts: 4}, 5)
		msn, part := p.Next()
		c := ts.dial()
		c.write("GET", blockingTarget(p))
		testwait.For(t, 5*time.Second, "the request parked", func() bool { return origin.LiveWaiters(ts.srv) == 1 })
		start := time.Now()
		if err := p.Publish(); err != nil {
			t.Fatal(err)
		}
		r := c.read("GET")
		t.Logf("answered %v after the rename", time.Since(start))
		mustStatus(t, r, 200, "blocking reload")
		mustBody(t, r, p.Published(), "blocking reload")
		if !strings.Contains(string(r.body), llpack.PartName(msn, part)) {
			t.Errorf("the answer does not list part %d of segment %d:\n%s", part, msn, r.body)
		}
		mustHeader(t, r, "Cache-Control", "public, max-age=1", "blocking reload")
		if st := ts.srv.Stats().Live; st.Answered != [2]int64{1, 0} || st.Held != [2]int64{} {
			t.Errorf("counters %+v, want one reload answered, none held", st)
		}
		// Satisfied already: answered at once, on the same connection.
		r = c.do("GET", fmt.Sprintf("/live/live.m3u8?_HLS_msn=%d&_HLS_part=%d", msn, part))
		mustStatus(t, r, 200, "satisfied reload")
		mustBody(t, r, p.Published(), "satisfied reload")
	})
}

// TestLiveEdgeRules: the refusals and time limit of §6.2.5.2, and a
// playlist that cannot block answered at once.
func TestLiveEdgeRules(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, nil)
		p := startPackager(t, root, llpack.Config{TargetDuration: 1, Parts: 4}, 9)
		msn, _ := p.Next() // segment msn-1 is the last whole one
		for _, tt := range []struct{ name, query string }{
			// "If the Playlist URI contains an _HLS_part directive but no
			// _HLS_msn directive, the Server MUST return Bad Request".
			{"_HLS_part without _HLS_msn", "_HLS_part=1"},
			// "If the _HLS_msn is greater than the Media Sequence Number of
			// the last Media Segment in the current Playlist plus two ...
			// the server SHOULD immediately return Bad Request".
			{"msn past the last segment plus two", fmt.Sprintf("_HLS_msn=%d", msn+2)},
			{"malformed msn", "_HLS_msn=x"},
		} {
			r := ts.get("/live/live.m3u8?" + tt.query)
			mustStatus(t, r, 400, tt.name)
		}
		// "A Server that cannot provide the requested Playlist after
		// blocking for more than three Target Durations SHOULD return
		// Service Unavailable": 3 s here.
		start := time.Now()
		r := ts.get(fmt.Sprintf("/live/live.m3u8?_HLS_msn=%d", msn+1))
		t.Logf("timed out after %v (three target durations: 3s)", time.Since(start))
		mustStatus(t, r, 503, "unsatisfied reload")
		mustHeader(t, r, "Cache-Control", "no-store", "unsatisfied reload")

		// Without CAN-BLOCK-RELOAD=YES the directives are ignored.
		q := startPackager(t, filepath.Join(root, "noblock"), llpack.Config{TargetDuration: 1, Parts: 4, NoBlockReload: true}, 5)
		msn, part := q.Next()
		r = ts.get(fmt.Sprintf("/noblock/live/live.m3u8?_HLS_msn=%d&_HLS_part=%d", msn, part))
		mustStatus(t, r, 200, "playlist without CAN-BLOCK-RELOAD")
		mustBody(t, r, q.Published(), "playlist without CAN-BLOCK-RELOAD")
		mustHeader(t, r, "Cache-Control", "public, max-age=10", "playlist without CAN-BLOCK-RELOAD")
	})
}

// TestLiveDeltaUpdate: _HLS_skip=YES gets the playlist with the segments
// further than CAN-SKIP-UNTIL from its end replaced by EXT-X-SKIP
// (§6.2.5.1), and the playlist as it is where CAN-SKIP-UNTIL is absent.
func TestLiveDeltaUpdate(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, nil)
		// Ten 1 s segments listed, a Skip Boundary of 6 s: the first three
		// have more than 6 s of segments after them; the fourth exactly 6.
		p := startPackager(t, root, llpack.Config{TargetDuration: 1, Parts: 2, Window: 10, SkipUntil: 6}, 2*14+1)
		full := string(p.Published())
		msn, _ := p.Next()
		first := msn - 10
		from := strings.Index(full, "#EXTINF")
		to := strings.Index(full, "\n"+llpack.SegmentName(first+2)+"\n") + len(llpack.SegmentName(first+2)) + 2
		want := full[:from] + "#EXT-X-SKIP:SKIPPED-SEGMENTS=3\n" + full[to:]
		for _, skip := range []string{"YES", "v2"} {
			r := ts.get("/live/live.m3u8?_HLS_skip=" + skip)
			mustStatus(t, r, 200, "delta update "+skip)
			mustBody(t, r, []byte(want), "delta update "+skip)
			mustHeader(t, r, "Cache-Control", "public, max-age=1", "delta update")
			if r.header("ETag") == "" {
				t.Errorf("delta update %s: no ETag", skip)
			}
		}
		q := startPackager(t, filepath.Join(root, "noskip"), llpack.Config{TargetDuration: 1, Parts: 2, Window: 10}, 2*14+1)
		r := ts.get("/noskip/live/live.m3u8?_HLS_skip=YES")
		mustStatus(t, r, 200, "skip without CAN-SKIP-UNTIL")
		mustBody(t, r, q.Published(), "skip without CAN-SKIP-UNTIL")
	})
}

// TestLiveManyWaiters: 200 requests parked on one playlist are all
// answered after one rename, each with the new version.
func TestLiveManyWaiters(t *testing.T) {
	const n = 200
	loopAndTLS(t, &tlsModes[0], func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, nil)
		p := startPackager(t, root, llpack.Config{TargetDuration: 2, Parts: 4}, 6)
		target := blockingTarget(p)
		clients := make([]*client, n)
		for i := range clients {
			clients[i] = ts.dial()
			clients[i].write("GET", target)
		}
		testwait.For(t, 10*time.Second, "every request parked", func() bool { return origin.LiveWaiters(ts.srv) == n })
		start := time.Now()
		if err := p.Publish(); err != nil {
			t.Fatal(err)
		}
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Add(1)
			go func() { // the test's: ends when the response is read
				defer wg.Done()
				r := c.read("GET")
				lat[i] = time.Since(start)
				if r.StatusCode != 200 || string(r.body) != string(p.Published()) {
					t.Errorf("waiter %d: status %d, %d bytes, want 200 and the new playlist", i, r.StatusCode, len(r.body))
				}
			}()
		}
		wg.Wait()
		slices.Sort(lat)
		t.Logf("%d waiters answered after the rename: p50 %v, p99 %v, max %v", n, lat[n/2], lat[n*99/100], lat[n-1])
	})
}

// loopAndTLS runs fn over plain HTTP on the event loops and over m, on
// the stream transport.
func loopAndTLS(t *testing.T, m *tlsMode, fn func(*testing.T, serverMode)) {
	t.Run("HTTP", func(t *testing.T) { fn(t, serverMode{engine: origin.EngineLoop}) })
	t.Run(m.name, func(t *testing.T) { fn(t, serverMode{tls: m}) })
}

// TestLiveDrainWakesWaiters: a drain answers parked blocking reloads and
// requests for a hinted part at once (503, Connection: close), long
// before their deadline.
func TestLiveDrainWakesWaiters(t *testing.T) {
	for _, engine := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(engine), func(t *testing.T) {
			root := t.TempDir()
			p := startPackager(t, root, llpack.Config{TargetDuration: 10, Parts: 4}, 5)
			ts, cancel, done := runDraining(t, root, engine, 0)
			srv := ts.srv
			c := ts.dial()
			c.write("GET", blockingTarget(p))
			testwait.For(t, 5*time.Second, "the request parked", func() bool { return origin.LiveWaiters(srv) == 1 })
			hint, _ := hintTarget(p)
			h := ts.dial()
			h.write("GET", hint)
			testwait.For(t, 5*time.Second, "the hinted part's request held", func() bool { return origin.LiveWaiters(srv) == 2 })
			start := time.Now()
			cancel()
			for _, c := range []*client{c, h} {
				r := c.read("GET")
				t.Logf("answered %v after the drain began (deadline: 30s)", time.Since(start))
				mustStatus(t, r, 503, "waiter at drain")
				if !r.Close {
					t.Errorf("waiter at drain: no Connection: close")
				}
			}
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			if st := srv.Stats().Live; st.Drained != [2]int64{1, 1} || st.Held != [2]int64{} {
				t.Errorf("counters %+v, want one reload and one hint drained, none held", st)
			}
		})
	}
}

// runDraining runs a server over root on engine with -settle settle until
// cancel, which drains it; done gives Run's error.
func runDraining(t *testing.T, root string, engine origin.Engine, settle time.Duration) (ts *testServer, cancel func(), done <-chan error) {
	t.Helper()
	cfg := origin.DefaultConfig()
	cfg.Root, cfg.Settle, cfg.Engine = root, settle, engine
	srv, err := origin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, 20*time.Second, ln) }() // ends with cancel, awaited by the test
	return &testServer{t: t, srv: srv, addr: ln.Addr().String(), root: root, cfg: cfg}, cancel, ran
}

// TestLiveParkedMemory measures what a parked blocking reload costs the
// heap beyond an idle keep-alive connection. It logs; it asserts nothing
// of the number.
func TestLiveParkedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	const n = 1000
	root := t.TempDir()
	ts := startServer(t, root, nil)
	p := startPackager(t, root, llpack.Config{TargetDuration: 10, Parts: 4}, 5)
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = ts.dial()
		mustStatus(t, clients[i].do("GET", "/live/live.m3u8"), 200, "warm-up")
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	target := blockingTarget(p)
	for _, c := range clients {
		c.write("GET", target)
	}
	testwait.For(t, 10*time.Second, "every request parked", func() bool { return origin.LiveWaiters(ts.srv) == n })
	after := heap()
	t.Logf("%d parked requests: heap %d -> %d bytes, %d bytes each", n, before, after, (int64(after)-int64(before))/n)
	if err := p.Publish(); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		mustStatus(t, c.read("GET"), 200, "parked request")
	}
}
