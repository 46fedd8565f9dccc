package origin_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/origin"
)

// testServer is a real segorigin server on 127.0.0.1:0 over a temp root:
// the one in-process server of this package's tests and benchmarks.
// Over TLS (a conformance test in a TLS mode, see everyMode, or
// startServerTLS), addr is the HTTPS listener and dial speaks TLS.
type testServer struct {
	t    testing.TB
	srv  *origin.Server
	addr string
	root string
	cfg  origin.Config // what it was made with: a test's reload starts from it

	tls *tls.Config          // the client's configuration; nil for plain HTTP
	emu *origin.KTLSEmulator // the kernel's stand-in, in emulated kTLS modes
}

// startServer runs a plain-HTTP server over root (a fresh temp dir when
// ""), with cfg changed by mod. It is stopped and closed when the test
// ends.
func startServer(t testing.TB, root string, mod func(*origin.Config)) *testServer {
	t.Helper()
	return startServerMode(t, root, mod, nil)
}

// startServerMode starts a plain server (m == nil) or an HTTPS one in mode
// m. Its log goes to t.Log (warnings and errors; mod may replace it). It
// is stopped and closed when t ends; Run failing, or not returning within
// 10 s of the stop, fails t.
func startServerMode(t testing.TB, root string, mod func(*origin.Config), m *tlsMode) *testServer {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	cfg := origin.DefaultConfig()
	cfg.Root = root
	// Tests write their files a moment before they fetch them, complete:
	// the settle rule would hold them back. The tests of that rule set it.
	cfg.Settle = 0
	cfg.Logger = slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if p := os.Getenv("TEST_POLLER"); p != "" {
		cfg.Poller = p // the suite on another backend of the loop engine (make test)
	}
	if m != nil {
		cfg.TLS.CertFile, cfg.TLS.KeyFile = writeTestCert(t)
		cfg.TLS.KTLS = m.ktls
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := origin.New(cfg)
	if err != nil {
		t.Fatalf("origin.New: %v", err)
	}
	var emu *origin.KTLSEmulator
	if m != nil && m.emulate {
		emu = origin.EmulateKTLS(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := ln
	if m != nil {
		served = origin.TLSListener(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The serving goroutine is the test's: cancel (at cleanup) ends Run.
	go func() { done <- srv.Run(ctx, 5*time.Second, served) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return within 10s of cancel")
		}
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ts := &testServer{t: t, srv: srv, addr: ln.Addr().String(), root: root, cfg: cfg}
	if m != nil {
		ts.tls, ts.emu = m.clientConfig(), emu
	}
	return ts
}

// testLogWriter sends server log lines to t.Log.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// writeSynth writes a deterministic file of size bytes at rel under root.
func writeSynth(t testing.TB, root, rel string, size int64) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := synth.WriteFile(p, filepath.Base(p), size); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// synthBytes is what the server must send for [off, off+n) of a synth file.
func synthBytes(name string, off, n int64) []byte {
	b := make([]byte, n)
	synth.Fill(name, off, b)
	return b
}

// client is one keep-alive connection speaking raw HTTP/1.1, so tests see
// exactly what is on the wire.
type client struct {
	t    testing.TB
	conn net.Conn
	br   *bufio.Reader
}

func (ts *testServer) dial() *client {
	ts.t.Helper()
	var c net.Conn
	var err error
	if ts.tls != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ts.addr, ts.tls)
	} else {
		c, err = net.DialTimeout("tcp", ts.addr, 5*time.Second)
	}
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return &client{t: ts.t, conn: c, br: bufio.NewReader(c)}
}

// response is a parsed response with its body read in full.
type response struct {
	*http.Response
	body []byte
}

func (r *response) header(k string) string { return r.Header.Get(k) }

// send writes a raw request (headers given as "K: V" lines) for method and
// target, and returns the parsed response.
func (c *client) do(method, target string, headers ...string) *response {
	c.t.Helper()
	c.write(method, target, headers...)
	return c.read(method)
}

func (c *client) write(method, target string, headers ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: test\r\n", method, target)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		c.t.Fatalf("write request: %v", err)
	}
}

// read parses one response; for HEAD no body is read, per RFC 9110.
func (c *client) read(method string) *response {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("%s: reading response: %v", method, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s: reading body: %v", method, err)
	}
	resp.Body.Close()
	return &response{Response: resp, body: body}
}

// get is a one-shot GET on a fresh connection.
func (ts *testServer) get(target string, headers ...string) *response {
	ts.t.Helper()
	return ts.dial().do("GET", target, headers...)
}

func (ts *testServer) do(method, target string, headers ...string) *response {
	ts.t.Helper()
	return ts.dial().do(method, target, headers...)
}

func mustStatus(t *testing.T, r *response, want int, what string) {
	t.Helper()
	if r.StatusCode != want {
		t.Fatalf("%s: status %d, want %d (body %q)", what, r.StatusCode, want, trunc(r.body))
	}
}

func mustHeader(t *testing.T, r *response, key, want, what string) {
	t.Helper()
	if got := r.header(key); got != want {
		t.Errorf("%s: %s = %q, want %q", what, key, got, want)
	}
}

func mustBody(t *testing.T, r *response, want []byte, what string) {
	t.Helper()
	if !bytes.Equal(r.body, want) {
		t.Fatalf("%s: body (%d bytes) differs from want (%d bytes) at offset %d", what, len(r.body), len(want), firstDiff(r.body, want))
	}
	if cl := r.header("Content-Length"); cl != fmt.Sprint(len(want)) {
		t.Errorf("%s: Content-Length = %q, want %d", what, cl, len(want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func trunc(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
