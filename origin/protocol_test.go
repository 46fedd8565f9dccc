package origin_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
)

// rawRequest writes req as is on a fresh connection and reads one
// response.
func rawRequest(t *testing.T, ts *testServer, req string) (*response, *client) {
	t.Helper()
	c := ts.dial()
	if _, err := io.WriteString(c.conn, req); err != nil {
		t.Fatalf("write %q: %v", req, err)
	}
	return c.read(strings.Fields(req)[0]), c
}

// closedByServer reports whether the server closed c after its response.
func closedByServer(c *client) bool {
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.br.ReadByte()
	return err == io.EOF
}

// TestLastModifiedNotAfterDate: RFC 9110 §8.8.2.1: "An origin server ...
// MUST NOT send a Last-Modified date that is later than the server's time
// of message origination (Date)", and a modification time in the future
// "MUST" be replaced by the Date. A playlist rewritten and fetched at once
// is the case that hit it: fasthttp's Date lags the clock.
func TestLastModifiedNotAfterDate(t *testing.T) {
	ts := startServer(t, "", nil)
	c := ts.dial()
	dates := func(r *response, what string) (lm, date time.Time) {
		t.Helper()
		var err1, err2 error
		lm, err1 = http.ParseTime(r.header("Last-Modified"))
		date, err2 = http.ParseTime(r.header("Date"))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: Last-Modified %q, Date %q: %v %v", what, r.header("Last-Modified"), r.header("Date"), err1, err2)
		}
		return lm, date
	}
	for i := range 30 {
		writeFile(t, ts.root, "live/index.m3u8", "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:"+strconv.Itoa(i)+"\n")
		r := c.do("GET", "/live/index.m3u8")
		mustStatus(t, r, 200, "fresh playlist")
		if lm, date := dates(r, "fresh playlist"); lm.After(date) {
			t.Fatalf("try %d: Last-Modified %s is after Date %s", i, r.header("Last-Modified"), r.header("Date"))
		}
		time.Sleep(50 * time.Millisecond) // spread the tries over a second boundary or two
	}

	p := writeFile(t, ts.root, "future.ts", "segment")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	r := c.do("GET", "/future.ts")
	mustStatus(t, r, 200, "future mtime")
	lm, date := dates(r, "future mtime")
	// Replaced by the Date: equal, or a second before when fasthttp's
	// clock ticked between the handler and the header's serialisation.
	if lm.After(date) || date.Sub(lm) > time.Second {
		t.Errorf("future mtime: Last-Modified %s, Date %s: want the Date", r.header("Last-Modified"), r.header("Date"))
	}
	// Such a date is not a strong validator (§8.8.2.2: strong only when
	// at least a second before the Date), so If-Range with it must not
	// yield a partial response (§13.1.5).
	r = c.do("GET", "/future.ts", "Range: bytes=0-1", "If-Range: "+r.header("Last-Modified"))
	mustStatus(t, r, 200, "If-Range with a replaced Last-Modified")
	mustBody(t, r, []byte("segment"), "If-Range with a replaced Last-Modified")
	// The ETag still validates it.
	etag := r.header("ETag")
	mustStatus(t, c.do("GET", "/future.ts", "If-None-Match: "+etag), 304, "If-None-Match on a future mtime")
}

// TestAbsoluteFormEmptyPath: RFC 9112 §3.2.2: a server MUST accept the
// absolute-form, and "If the target URI's path component is empty, the
// client MUST send "/" as the path": "http://host?q" names "/".
func TestAbsoluteFormEmptyPath(t *testing.T) {
	ts := rangeRoot(t)
	r, _ := rawRequest(t, ts, "GET http://localhost?args HTTP/1.1\r\nHost: localhost\r\n\r\n")
	want, _ := rawRequest(t, ts, "GET /?args HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if r.StatusCode != want.StatusCode || string(r.body) != string(want.body) {
		t.Errorf("GET http://localhost?args = %d %q, want what GET /?args gets: %d %q", r.StatusCode, r.body, want.StatusCode, want.body)
	}
	if r.StatusCode == 400 {
		t.Errorf("GET http://localhost?args = 400: the absolute-form must be accepted")
	}
	r, _ = rawRequest(t, ts, "GET http://localhost/test/digits.txt?args HTTP/1.1\r\nHost: localhost\r\n\r\n")
	mustStatus(t, r, 200, "absolute-form with a path")
	mustBody(t, r, []byte("0123456789"), "absolute-form with a path")
}

// TestMethodNotImplemented: RFC 9110 §9.1: "An origin server that receives
// a request method that is unrecognized or not implemented SHOULD respond
// with the 501 (Not Implemented) status code"; 405 with Allow (§15.5.6) is
// for a method it knows but the resource does not allow.
func TestMethodNotImplemented(t *testing.T) {
	ts := rangeRoot(t)
	for _, m := range []string{"FOO", "BREW", "PROPFIND", "get"} {
		r := ts.do(m, "/test/digits.txt", "Content-Length: 0")
		mustStatus(t, r, 501, m)
		mustHeader(t, r, "Allow", "", m)
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "TRACE"} {
		r := ts.do(m, "/test/digits.txt", "Content-Length: 0")
		mustStatus(t, r, 405, m)
		mustHeader(t, r, "Allow", "GET, HEAD, OPTIONS", m)
	}
	if n := ts.srv.Stats().Responses(501); n != 4 {
		t.Errorf("Responses(501) = %d, want 4", n)
	}
}

// TestHTTPVersion: RFC 9110 §15.6.6: 505 "indicates that the server does
// not support, or refuses to support, the major version of HTTP that was
// used in the request message". A later minor version of HTTP/1 is served
// as HTTP/1.1 (§2.5).
func TestHTTPVersion(t *testing.T) {
	ts := rangeRoot(t)
	for _, tc := range []struct {
		version string
		want    int
	}{
		{"HTTP/1.1", 200},
		{"HTTP/1.0", 200},
		{"HTTP/1.2", 200},
		{"HTTP/2.0", 505},
		{"HTTP/3.0", 505},
		{"HTTP/0.9", 505},
	} {
		r, c := rawRequest(t, ts, "GET /test/digits.txt "+tc.version+"\r\nHost: t\r\n\r\n")
		mustStatus(t, r, tc.want, tc.version)
		if tc.want == 505 && !closedByServer(c) {
			t.Errorf("%s: 505 left the connection open", tc.version)
		}
	}
}

// TestFieldNameNotToken: RFC 9110 §5.1: field-name = token, and a space is
// not a tchar; nginx answers 400. RFC 9112 §5.1: whitespace between the
// name and the colon MUST be answered 400 as well.
func TestFieldNameNotToken(t *testing.T) {
	ts := rangeRoot(t)
	for _, field := range []string{"X A: v", "X-A : v", "Range Spoof: bytes=0-1"} {
		r, c := rawRequest(t, ts, "GET /test/digits.txt HTTP/1.1\r\nHost: t\r\n"+field+"\r\n\r\n")
		mustStatus(t, r, 400, field)
		if !closedByServer(c) {
			t.Errorf("%q: 400 left the connection open", field)
		}
	}
	r, _ := rawRequest(t, ts, "GET /test/digits.txt HTTP/1.1\r\nHost: t\r\nX-A: v w\r\n\r\n")
	mustStatus(t, r, 200, "a space in a field value")
}

// TestResponsesCountedByCode: every response is counted once, by the code
// it carried, unparseable requests' 400 included.
func TestResponsesCountedByCode(t *testing.T) {
	ts := rangeRoot(t)
	c := ts.dial()
	c.do("GET", "/test/digits.txt")
	c.do("GET", "/test/digits.txt", "Range: bytes=0-1")
	c.do("GET", "/nope.ts")
	c.do("GET", "/test/digits.txt", "Range: bytes=20-")
	rawRequest(t, ts, "GET /x HTTP/1.1\r\nHost: t\r\nBad\x01Name: v\r\n\r\n")
	st := ts.srv.Stats
	waitFor(t, 5*time.Second, "five responses counted", func() bool {
		return st().Status2xx+st().Status4xx == 5
	})
	for code, want := range map[int]int64{200: 1, 206: 1, 404: 1, 416: 1, 400: 1, 304: 0} {
		if got := st().Responses(code); got != want {
			t.Errorf("Responses(%d) = %d, want %d", code, got, want)
		}
	}
}

// TestRunCancelledAtOnce: a Run whose context is already done (a stop
// signal during start-up) drains and returns; fasthttp's Shutdown alone
// misses a Serve that has not begun, which then accepts forever.
func TestRunCancelledAtOnce(t *testing.T) {
	for i := range 20 {
		cfg := origin.DefaultConfig()
		cfg.Root = t.TempDir()
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		srv, err := origin.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		b, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx, time.Second, a, b) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("try %d: Run = %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("try %d: Run with a done context has not returned after 10s", i)
		}
		srv.Close()
	}
}

// TestHTTP12KeepsConnection: a later minor version of HTTP/1 is served as
// HTTP/1.1 (RFC 9110 §2.5), so its connection persists unless the client
// sent "close" (RFC 9112 §9.3): a request pipelined behind an HTTP/1.2 one
// is answered, on both engines.
func TestHTTP12KeepsConnection(t *testing.T) {
	for _, engine := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(engine), func(t *testing.T) {
			ts := startServer(t, "", func(c *origin.Config) { c.Engine = engine })
			writeFile(t, ts.root, "a.txt", "AAAA")
			c := ts.dial()
			io.WriteString(c.conn, "GET /a.txt HTTP/1.2\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
			for i := range 2 {
				mustBody(t, c.read("GET"), []byte("AAAA"), fmt.Sprintf("response %d", i))
			}
			_, c2 := rawRequest(t, ts, "GET /a.txt HTTP/1.2\r\nHost: t\r\nConnection: close\r\n\r\n")
			if !closedByServer(c2) {
				t.Error("HTTP/1.2 with Connection: close: the connection stayed open")
			}
		})
	}
}

// TestRunReturnsWithConnectionsClosed: Run returns only once every
// connection it served is closed, not merely once its handlers are done:
// an HTTPS connection sends close_notify as it closes, and a process that
// exits between the two ends it with a bare FIN instead. Responses in
// flight at the stop finish whole first (on both engines and over TLS).
func TestRunReturnsWithConnectionsClosed(t *testing.T) {
	const conns, size = 12, 4 << 20
	for _, tc := range []struct {
		name   string
		engine origin.Engine
		tls    *tlsMode
	}{
		{"HTTP", origin.EngineLoop, nil},
		{"HTTP-fasthttp", origin.EngineFastHTTP, nil},
		{"TLS1.3", "", &tlsModes[1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := origin.DefaultConfig()
			cfg.Root = t.TempDir()
			cfg.Logger = slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
			if tc.engine != "" {
				cfg.Engine = tc.engine
			}
			if tc.tls != nil {
				cfg.TLS.CertFile, cfg.TLS.KeyFile = writeTestCert(t)
			}
			writeSynth(t, cfg.Root, "big.ts", size)
			srv, err := origin.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := ln
			if tc.tls != nil {
				served = origin.TLSListener(ln)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- srv.Run(ctx, 10*time.Second, served) }() // ends with cancel
			ts := &testServer{t: t, srv: srv, addr: ln.Addr().String(), root: cfg.Root, cfg: cfg}
			if tc.tls != nil {
				ts.tls = tc.tls.clientConfig()
			}
			bodies := make([]*http.Response, conns)
			for i := range bodies {
				c := ts.dial()
				c.write("GET", "/big.ts")
				resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
				if err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				bodies[i] = resp // its body mostly unread: in flight at the stop
			}
			cancel()
			got := make(chan error, conns)
			for i, resp := range bodies {
				go func() { // ends at the body's end or the client's deadline
					b, err := io.ReadAll(resp.Body)
					if err == nil && len(b) != size {
						err = fmt.Errorf("%d bytes, want %d", len(b), size)
					}
					if err != nil {
						err = fmt.Errorf("connection %d: the response in flight at the stop: %w", i, err)
					}
					got <- err
				}()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Run has not returned 30 s after the stop")
			}
			if n := srv.Stats().ConnsOpen; n != 0 {
				t.Errorf("Run returned with %d connections still open", n)
			}
			for range conns {
				if err := <-got; err != nil {
					t.Error(err)
				}
			}
		})
	}
}
