package origin_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"segorigin/origin"
)

// userLoopModes are the TLS modes whose connections the event loops serve
// with crypto/tls on their threads where the kernel has no kTLS.
func userLoopModes() []tlsMode { return tlsModes[:2] }

// onUserLoop: without a kTLS kernel, every handshaken connection of ts
// went to the loops with crypto/tls (loop_userspace); with one, the
// kernel's path is tested elsewhere and the test stops.
func onUserLoop(t *testing.T, ts *testServer) {
	t.Helper()
	if kernelHasKTLS(ts) {
		t.Skip("this kernel has kTLS: its connections go to the loops with the kernel's records (loop_ktls)")
	}
	waitFor(t, 5*time.Second, "the connections counted by transport", func() bool {
		s := ts.srv.Stats().TLS
		return s.TransportLoopUserspace+s.TransportStreamUserspace >= s.Handshakes
	})
	if s := ts.srv.Stats().TLS; s.TransportLoopUserspace != s.Handshakes || s.Handshakes == 0 {
		t.Errorf("loop_userspace %d of %d handshakes (stream_userspace %d), want all",
			s.TransportLoopUserspace, s.Handshakes, s.TransportStreamUserspace)
	}
}

// TestTLSLoopPipelinedBurst: 120 requests written at once over HTTPS, far
// more than a loop reads in one go: crypto/tls holds what the loop's
// buffer could not take, and the loop reads it again before it waits
// (nothing more arrives to announce it). Every answer, in order, exact.
func TestTLSLoopPipelinedBurst(t *testing.T) {
	for _, m := range userLoopModes() {
		t.Run(m.name, func(t *testing.T) {
			ts := startServerTLS(t, "", nil, m)
			writeFile(t, ts.root, "a.txt", "hello\n")
			writeSynth(t, ts.root, "big.m4s", 1<<20)
			c := ts.dial()
			var b strings.Builder
			const n = 120
			for i := range n {
				if i%3 == 2 {
					fmt.Fprintf(&b, "GET /big.m4s HTTP/1.1\r\nHost: t\r\nRange: bytes=%d-%d\r\nX-Pad: %s\r\n\r\n", i*1000, i*1000+4999, strings.Repeat("p", 200))
				} else {
					fmt.Fprintf(&b, "GET /a.txt?n=%d HTTP/1.1\r\nHost: t\r\nX-Pad: %s\r\n\r\n", i, strings.Repeat("p", 200))
				}
			}
			if _, err := io.WriteString(c.conn, b.String()); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				r := c.read("GET")
				what := fmt.Sprintf("answer %d", i)
				if i%3 == 2 {
					mustStatus(t, r, 206, what)
					mustBody(t, r, synthBytes("big.m4s", int64(i*1000), 5000), what)
				} else {
					mustBody(t, r, []byte("hello\n"), what)
				}
			}
			onUserLoop(t, ts)
		})
	}
}

// TestTLSLoopSlowReader: a client that reads an 8 MiB body slowly fills
// the socket: the records sealed past what it took wait for room, and the
// body arrives exact, followed by the next answer on the connection.
func TestTLSLoopSlowReader(t *testing.T) {
	for _, m := range userLoopModes() {
		t.Run(m.name, func(t *testing.T) {
			ts := startServerTLS(t, "", nil, m)
			const size = 8 << 20
			writeSynth(t, ts.root, "big.m4s", size)
			writeFile(t, ts.root, "a.txt", "hello\n")
			c := ts.dial()
			c.write("GET", "/big.m4s")
			c.write("GET", "/a.txt")
			resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			buf := make([]byte, 64<<10)
			for i := 0; got.Len() < size; i++ {
				k, err := resp.Body.Read(buf)
				got.Write(buf[:k])
				if err != nil && err != io.EOF {
					t.Fatalf("after %d bytes: %v", got.Len(), err)
				}
				if err == io.EOF {
					break
				}
				if i < 20 {
					time.Sleep(20 * time.Millisecond) // the socket fills meanwhile
				}
			}
			resp.Body.Close()
			if !bytes.Equal(got.Bytes(), synthBytes("big.m4s", 0, size)) {
				t.Fatalf("8 MiB body: %d bytes, first difference at %d", got.Len(), firstDiff(got.Bytes(), synthBytes("big.m4s", 0, size)))
			}
			mustBody(t, c.read("GET"), []byte("hello\n"), "the answer after it")
			onUserLoop(t, ts)
		})
	}
}

// TestTLSLoopCloseNotify: a keep-alive connection the server closes when
// its idle time is over ends with a close_notify alert (RFC 8446 §6.1;
// RFC 5246 §7.2.1): TLS 1.2's alert record shows its type in the clear.
func TestTLSLoopCloseNotify(t *testing.T) {
	m := tlsModes[0]
	ts := startServerTLS(t, "", func(c *origin.Config) { c.IdleTimeout = 300 * time.Millisecond }, m)
	writeFile(t, ts.root, "a.txt", "hello\n")
	raw, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	rec := &recordTap{Conn: raw}
	cfg := ts.tls.Clone()
	cfg.ServerName, _, _ = net.SplitHostPort(ts.addr)
	c := tls.Client(rec, cfg)
	if _, err := io.WriteString(c, "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	r, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the idle timeout: %v, want io.EOF", err)
	}
	if typ := rec.lastType(); typ != 21 {
		t.Errorf("the last record's type is %d, want 21 (alert: close_notify)", typ)
	}
	onUserLoop(t, ts)
}

// recordTap follows the TLS records the server sends, by their clear
// headers (types and lengths).
type recordTap struct {
	net.Conn
	mu   sync.Mutex
	buf  []byte // the bytes of the record in progress, from its header
	last byte   // the type of the last whole record
}

func (r *recordTap) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p[:n]...)
	for len(r.buf) >= 5 {
		l := 5 + (int(r.buf[3])<<8 | int(r.buf[4]))
		if len(r.buf) < l {
			break
		}
		r.last = r.buf[0]
		r.buf = r.buf[l:]
	}
	return n, err
}

func (r *recordTap) lastType() byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// TestDrainClosesListenersFirst: at a drain every listener closes before
// any connection does. An idle HTTPS connection on the loops of the plain
// listener is closed at once by their drain, and a client that sees that
// and connects again must be refused, not accepted by an HTTPS listener
// that another goroutine has yet to close. The interleaving that broke it
// (once, in the kTLS VM test on one vCPU: the loops' drain ran before the
// HTTPS listener's close) depends on the scheduler and is not forced
// here: this test guards the order the drain now keeps by construction.
func TestDrainClosesListenersFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	cfg := origin.DefaultConfig()
	cfg.Root, cfg.Settle = t.TempDir(), 0
	cfg.TLS.CertFile, cfg.TLS.KeyFile = writeTestCert(t)
	cfg.Logger = slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	writeFile(t, cfg.Root, "a.txt", "hello\n")
	srv, err := origin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, 5*time.Second, plain, origin.TLSListener(secure)) }() // ends with cancel, awaited below
	ts := &testServer{t: t, srv: srv, addr: secure.Addr().String(), root: cfg.Root, cfg: cfg, tls: tlsModes[1].clientConfig()}
	c := ts.dial()
	mustBody(t, c.do("GET", "/a.txt"), []byte("hello\n"), "before the drain")
	onUserLoop(t, ts)
	cancel()
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle HTTPS connection at the drain: %v, want io.EOF", err)
	}
	if nc, err := net.DialTimeout("tcp", ts.addr, 5*time.Second); err == nil {
		nc.Close()
		t.Errorf("a new HTTPS connection was accepted after an idle one was closed by the drain")
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a new HTTPS connection during the drain: %v, want connection refused", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
