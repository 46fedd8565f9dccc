//go:build linux

package origin_test

import (
	"testing"
	"time"

	"segorigin/internal/testwait"
	"segorigin/origin"
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
