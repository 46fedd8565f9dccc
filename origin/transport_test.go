package origin_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testwait"
	"segorigin/origin"
)

// TestSendfilePathServes: on plain TCP every body goes through sendfile, as
// the path counters show, and the bytes are exact.
func TestSendfilePathServes(t *testing.T) {
	ts := rangeRoot(t)
	st := func() origin.TransportStats { return ts.srv.Stats().Transport }
	c := ts.dial()
	mustBody(t, c.do("GET", "/seg.m4s"), synthBytes("seg.m4s", 0, 100_000), "full")
	mustBody(t, c.do("GET", "/seg.m4s", "Range: bytes=1000-1999"), synthBytes("seg.m4s", 1000, 1000), "span")
	mp := c.do("GET", "/seg.m4s", "Range: bytes=0-0,500-599")
	mustStatus(t, mp, 206, "multipart")
	// The counters move after the last byte is handed to the kernel, which
	// may be after the client has read it.
	waitFor(t, 5*time.Second, "SendfileResponses = 3", func() bool { return st().SendfileResponses == 3 })
	if got := st().CopyResponses; got != 0 {
		t.Errorf("CopyResponses = %d, want 0", got)
	}
	want := int64(100_000 + 1000 + len(mp.body))
	if got := st().SendfileBytes; got != want {
		t.Errorf("SendfileBytes = %d, want %d", got, want)
	}
}

// TestCopyPathIdenticalBytes: the userspace path sends the same bytes as
// sendfile for every response shape, and is counted as the copy path.
func TestCopyPathIdenticalBytes(t *testing.T) {
	sf := rangeRoot(t)
	cp := startServer(t, sf.root, func(c *origin.Config) { c.DisableSendfile = true })
	for _, rng := range []string{"", "bytes=0-99999", "bytes=5-", "bytes=-70000", "bytes=0-0,10-20,99990-"} {
		var hdrs []string
		if rng != "" {
			hdrs = append(hdrs, "Range: "+rng)
		}
		a, b := sf.get("/seg.m4s", hdrs...), cp.get("/seg.m4s", hdrs...)
		if a.StatusCode != b.StatusCode || a.header("Content-Range") != b.header("Content-Range") {
			t.Fatalf("Range %q: sendfile %d %q, copy %d %q", rng, a.StatusCode, a.header("Content-Range"), b.StatusCode, b.header("Content-Range"))
		}
		if strings.HasPrefix(a.header("Content-Type"), "multipart/") {
			// Boundaries are random: compare with the boundary swapped.
			ab := boundaryOf(a.header("Content-Type"))
			bb := boundaryOf(b.header("Content-Type"))
			b.body = bytes.ReplaceAll(b.body, []byte(bb), []byte(ab))
		}
		if !bytes.Equal(a.body, b.body) {
			t.Fatalf("Range %q: copy path body differs from sendfile at %d", rng, firstDiff(a.body, b.body))
		}
	}
	waitFor(t, 5*time.Second, "copy server CopyResponses = 5", func() bool { return cp.srv.Stats().Transport.CopyResponses == 5 })
	if n := cp.srv.Stats().Transport.SendfileResponses; n != 0 {
		t.Errorf("copy server SendfileResponses = %d, want 0", n)
	}
}

func boundaryOf(ct string) string {
	_, b, _ := strings.Cut(ct, "boundary=")
	return b
}

// TestSlowReader: a client with a tiny receive buffer that reads in small
// sips still gets every byte: sendfile's short sends and EAGAIN wait on the
// poller.
func TestSlowReader(t *testing.T) {
	ts := startServer(t, "", nil)
	writeSynth(t, ts.root, "w1/seg.m4s", 2<<20)
	c := ts.dial()
	c.conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	c.write("GET", "/w1/seg.m4s")
	// Sip for a while before reading the rest at full speed.
	var raw []byte
	buf := make([]byte, 1024)
	for range 40 {
		n, err := c.br.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, buf[:n]...)
		time.Sleep(5 * time.Millisecond)
	}
	i := bytes.Index(raw, []byte("\r\n\r\n"))
	if i < 0 {
		t.Fatalf("no header end in the first %d bytes", len(raw))
	}
	body := raw[i+4:]
	rest := make([]byte, 2<<20-len(body))
	if _, err := io.ReadFull(c.br, rest); err != nil {
		t.Fatalf("reading the rest: %v", err)
	}
	body = append(body, rest...)
	if want := synthBytes("seg.m4s", 0, 2<<20); !bytes.Equal(body, want) {
		t.Fatalf("slow reader got %d bytes, want %d; first difference at %d", len(body), len(want), firstDiff(body, want))
	}
}

// TestAbortReleasesFile: clients that disconnect mid-body, or stop reading
// until the write timeout, end their responses and release the file; no
// descriptor stays open and no goroutine stays behind.
func TestAbortReleasesFile(t *testing.T) {
	ts := startServer(t, "", func(c *origin.Config) {
		c.CacheFiles = 0 // every response opens its own fd: leaks show in OpenFiles
		c.WriteTimeout = 300 * time.Millisecond
	})
	writeSynth(t, ts.root, "big.mp4", 64<<20)
	baseFDs := countFDs(t)
	var idle []net.Conn
	for i := range 20 {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(8192)
		fmt.Fprintf(c, "GET /big.mp4 HTTP/1.1\r\nHost: t\r\n\r\n")
		if i%2 == 0 {
			// Read a little, then vanish with a reset.
			io.ReadFull(c, make([]byte, 32<<10))
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			continue
		}
		// Never read: the server's write timeout must end the response.
		idle = append(idle, c)
	}
	waitFor(t, 15*time.Second, "all aborted responses to release their files", func() bool {
		return ts.srv.CacheStats().OpenFiles == 0 && ts.srv.Stats().Transport.Aborted == 20
	})
	for _, c := range idle {
		c.Close() // the client's own descriptors count in this process too
	}
	waitFor(t, 5*time.Second, "descriptors back to baseline", func() bool { return countFDs(t) <= baseFDs })
	waitFor(t, 5*time.Second, "no goroutine serving a connection", func() bool { return servingGoroutines() == "" })
}

// TestTruncatedWhileSending: a file cut short mid-response ends the
// connection early; every byte that did arrive is a true byte of the file
// and none is sent past its new end as if valid.
func TestTruncatedWhileSending(t *testing.T) {
	ts := startServer(t, "", nil)
	p := writeSynth(t, ts.root, "t/seg.mp4", 32<<20)
	c := ts.dial()
	c.conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	c.write("GET", "/t/seg.mp4")
	first := make([]byte, 16<<10)
	if _, err := io.ReadFull(c.br, first); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(c.br) // ends with EOF or a reset: either is fine
	raw := append(first, rest...)
	i := bytes.Index(raw, []byte("\r\n\r\n"))
	body := raw[i+4:]
	if len(body) >= 32<<20 {
		t.Fatalf("got the whole %d bytes after truncation to 1 MiB", len(body))
	}
	if !bytes.Equal(body, synthBytes("seg.mp4", 0, int64(len(body)))) {
		t.Fatalf("a received byte is not the file's, at %d", firstDiff(body, synthBytes("seg.mp4", 0, int64(len(body)))))
	}
	waitFor(t, 5*time.Second, "Truncated counter", func() bool { return ts.srv.Stats().Transport.Truncated == 1 })
}

// servingGoroutines returns the stacks of goroutines still serving a
// connection or sending a body ("" when none). fasthttp's idle workers wait
// in its pool for the next connection and are not counted.
func servingGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "fasthttp.(*Server).serveConn") || strings.Contains(g, "origin.(*bodyStream)") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// waitFor is testwait.For, under the name this package's tests use.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, d, what, cond)
}
