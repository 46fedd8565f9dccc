//go:build linux

package origin_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/fixtures/llpack"
	"segorigin/internal/testwait"
	"segorigin/origin"
	"segorigin/origin/admin"
)

// leaveParkedStream starts a stream of target, waits until it is parked
// for the file's next bytes, and closes the client's connection.
func leaveParkedStream(t *testing.T, ts *testServer, target string) {
	t.Helper()
	c := ts.dial()
	c.write("GET", target)
	testwait.For(t, 5*time.Second, "the stream parked", func() bool {
		return ts.srv.Stats().Grow.Streaming == 1 && origin.LiveWaiters(ts.srv) == 1
	})
	c.conn.Close()
}

// TestGrowClientLeavesQuietFile: a client that closes its connection while
// its stream waits for bytes that never come (the writer keeps the file
// open and writes nothing more) ends the stream counted aborted, not
// timed out three target durations later, on every transport: the
// stream transport's goroutine, which reads nothing while it waits, asks
// the socket (as nginx's ngx_http_test_reading treats a client's FIN).
func TestGrowClientLeavesQuietFile(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		ts, p := liveDir(t, mode)
		target, _, _ := growingPart(t, p)
		leaveParkedStream(t, ts, target)
		testwait.For(t, 10*time.Second, "the stream counted aborted", func() bool {
			st := ts.srv.Stats().Grow
			if st.TimedOut != 0 {
				t.Fatalf("counters %+v: the client's leaving counted as a stall", st)
			}
			return st.Aborted == 1 && st.Streaming == 0
		})
		mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist after")
	})
}

// TestParkedClientsLeave: blocking reloads parked on the event loops, and
// on the stream transport (-engine fasthttp; HTTPS without kTLS), whose
// clients close their connections are let go at once: the waiters are
// unlisted, counted client_left, and their connections closed (the
// server's descriptors freed), long before their three target durations
// (30 s here) would time them out; a reload parked after them is still
// answered.
func TestParkedClientsLeave(t *testing.T) {
	for _, e := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(e), func(t *testing.T) { parkedClientsLeave(t, e) })
	}
}

func parkedClientsLeave(t *testing.T, engine origin.Engine) {
	const n = 50
	root := t.TempDir()
	ts := startServer(t, root, func(c *origin.Config) { c.Engine = engine })
	p := startPackager(t, root, llpack.Config{TargetDuration: 10, Parts: 4}, 5)
	addr := ts.tcpAddr(t)
	req := []byte(fmt.Sprintf(parkedRequest, blockingTarget(p)))
	fds := make([]int, 0, n)
	for range n {
		fd := rawDial(t, addr)
		fds = append(fds, fd)
		if _, err := unix.Write(fd, req); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 10*time.Second, fmt.Sprintf("%d requests parked", n), func() bool { return origin.LiveWaiters(ts.srv) == n })
	for _, fd := range fds {
		unix.Close(fd)
	}
	testwait.For(t, 10*time.Second, "the parked clients let go", func() bool {
		st := ts.srv.Stats()
		return origin.LiveWaiters(ts.srv) == 0 && st.Live.ClientLeft[0] == n && st.Live.Held[0] == 0 && st.ConnsOpen == 0
	})
	if st := ts.srv.Stats().Live; st.TimedOut[0] != 0 || st.Answered[0] != 0 {
		t.Errorf("live counters %+v: want only client_left", st)
	}
	rec := httptest.NewRecorder()
	admin.Handler(ts.srv, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if line := fmt.Sprintf(`segorigin_live_held_total{kind="reload",outcome="client_left"} %d`, n); !strings.Contains(rec.Body.String(), line+"\n") {
		t.Errorf("/metrics lacks %q", line)
	}
	c := ts.dial()
	c.write("GET", blockingTarget(p))
	testwait.For(t, 10*time.Second, "a new reload parked", func() bool { return origin.LiveWaiters(ts.srv) == 1 })
	if err := p.Publish(); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, c.read("GET"), 200, "the reload parked after them")
}

// TestParkedClientLeavesEveryMode: on every transport, HTTPS included (a
// client's close_notify, then its FIN), a client that closes its
// connection while its blocking reload is parked is let go at once,
// counted client_left, and its connection closed, not answered or timed
// out when its three target durations (30 s) end. A client that stays
// and sends its next request while the first is parked (pipelined) is
// not taken for gone: both are answered, in order, on the connection.
func TestParkedClientLeavesEveryMode(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		const n = 4
		root := t.TempDir()
		ts := mode.start(t, root, nil)
		p := startPackager(t, root, llpack.Config{TargetDuration: 10, Parts: 4}, 5)
		target := blockingTarget(p)
		stay := ts.dial()
		stay.write("GET", target)
		var cs []*client
		for range n {
			c := ts.dial()
			c.write("GET", target)
			cs = append(cs, c)
		}
		testwait.For(t, 10*time.Second, fmt.Sprintf("%d requests parked", n+1), func() bool { return origin.LiveWaiters(ts.srv) == n+1 })
		stay.write("GET", "/live/live.m3u8")
		for _, c := range cs {
			c.conn.Close()
		}
		testwait.For(t, 10*time.Second, "the parked clients let go", func() bool {
			st := ts.srv.Stats()
			return origin.LiveWaiters(ts.srv) == 1 && st.Live.ClientLeft[0] == n && st.Live.Held[0] == 1 && st.ConnsOpen == 1
		})
		if err := p.Publish(); err != nil {
			t.Fatal(err)
		}
		mustStatus(t, stay.read("GET"), 200, "the reload that stayed")
		mustStatus(t, stay.read("GET"), 200, "the request pipelined behind it")
		stay.write("GET", "/live/live.m3u8")
		mustStatus(t, stay.read("GET"), 200, "the next request on the connection")
		if st := ts.srv.Stats().Live; st.TimedOut[0] != 0 || st.Answered[0] != 1 || st.ClientLeft[0] != n {
			t.Errorf("live counters %+v: want %d client_left, 1 answered", st, n)
		}
	})
}
