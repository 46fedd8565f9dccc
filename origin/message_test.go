package origin_test

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
)

// messageRoot is a root with a.txt ("0123456789", an hour old) and an
// empty segment and subtitle no one is writing.
func messageRoot(t *testing.T, mode serverMode) *testServer {
	t.Helper()
	ts := mode.start(t, "", nil)
	old := time.Now().Add(-time.Hour)
	for name, body := range map[string]string{"a.txt": "0123456789", "empty.ts": "", "empty.vtt": ""} {
		p := writeFile(t, ts.root, name, body)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

// TestTransferEncodingIdentity: RFC 9112 §6.3 (4): "If a
// Transfer-Encoding header field is present in a request and the chunked
// transfer coding is not the final encoding, ... the server MUST respond
// with the 400 (Bad Request) status code and then close the connection."
func TestTransferEncodingIdentity(t *testing.T) { everyMode(t, testTransferEncodingIdentity) }

func testTransferEncodingIdentity(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	for _, te := range []string{"identity", "Identity"} {
		r, c := rawRequest(t, ts, "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "+te+"\r\n\r\n")
		mustStatus(t, r, 400, "Transfer-Encoding: "+te)
		if !closedByServer(c) {
			t.Errorf("Transfer-Encoding: %s: connection kept open, want closed", te)
		}
	}
}

// TestRepeatedPreconditionLines: RFC 9110 §5.3, a field's lines combine
// into one list, "in order, separated by a comma", and §13.1.1/§13.1.2
// judge the whole list: an ETag on the second If-None-Match line counts.
func TestRepeatedPreconditionLines(t *testing.T) { everyMode(t, testRepeatedPreconditionLines) }

func testRepeatedPreconditionLines(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	c := ts.dial()
	etag := c.do("GET", "/a.txt").header("ETag")
	mustStatus(t, c.do("GET", "/a.txt", `If-None-Match: "x"`, "If-None-Match: "+etag), 304, "If-None-Match, the ETag on a second line")
	mustStatus(t, c.do("GET", "/a.txt", `If-Match: "x"`, "If-Match: "+etag), 200, "If-Match, the ETag on a second line")
	mustStatus(t, c.do("GET", "/a.txt", `If-Match: "x"`, `If-Match: "y"`), 412, "If-Match, no line with the ETag")
}

// TestInvalidHost: RFC 9112 §3.2, "A server MUST respond with a 400 (Bad
// Request) status code to any HTTP/1.1 request message that ... contains
// ... a Host header field with an invalid field value"; RFC 9110 §4.2.1,
// an "http" URI with an empty host "MUST" be rejected; §4.2.4, userinfo in
// one is treated as an error.
func TestInvalidHost(t *testing.T) { everyMode(t, testInvalidHost) }

func testInvalidHost(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	for _, req := range []string{
		"GET /a.txt HTTP/1.1\r\nHost: \xff\r\n\r\n",
		"GET /a.txt HTTP/1.1\r\nHost: u@b\r\n\r\n",
		"GET /a.txt HTTP/1.1\r\nHost: x:99999\r\n\r\n",
		"GET http:///a.txt HTTP/1.0\r\n\r\n",
		"GET http://u@x/a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		r, c := rawRequest(t, ts, req)
		mustStatus(t, r, 400, strings.Fields(req)[1]+" "+strings.Split(req, "\r\n")[1])
		if !closedByServer(c) {
			t.Errorf("%q: connection kept open after 400, want closed", req)
		}
	}
	for _, req := range []string{
		"GET /a.txt HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
		"GET http://x:80/a.txt HTTP/1.1\r\nHost: other\r\n\r\n",
	} {
		r, _ := rawRequest(t, ts, req)
		mustStatus(t, r, 200, req)
	}
}

// TestEmptyFileServed: an empty file is a valid resource (nginx: 200,
// Content-Length: 0); one no one is writing is no file in progress.
func TestEmptyFileServed(t *testing.T) { everyMode(t, testEmptyFileServed) }

func testEmptyFileServed(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	for _, name := range []string{"/empty.ts", "/empty.vtt"} {
		r := ts.get(name)
		mustStatus(t, r, 200, name)
		mustBody(t, r, nil, name)
		if cc := r.header("Cache-Control"); strings.Contains(cc, "no-store") {
			t.Errorf("%s: Cache-Control %q, want the segment's", name, cc)
		}
	}
}

// TestFutureMtimeIsModified: RFC 9110 §13.1.3, If-Modified-Since is false
// (304) only when the representation has not been modified since the
// date. A file whose mtime is moved into the future has changed; its
// earlier Last-Modified must get 200 (Go's fs_test expects the same).
func TestFutureMtimeIsModified(t *testing.T) { everyMode(t, testFutureMtimeIsModified) }

func testFutureMtimeIsModified(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	lm := ts.get("/a.txt").header("Last-Modified")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(ts.root+"/a.txt", future, future); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // past the settle period of the touch's ctime (tests run with -settle 0 anyway)
	r := ts.get("/a.txt", "If-Modified-Since: "+lm)
	mustStatus(t, r, 200, "If-Modified-Since of the Last-Modified before the mtime moved")
	mustBody(t, r, []byte("0123456789"), "If-Modified-Since of the Last-Modified before the mtime moved")
}

// TestBodyOverLimit: RFC 9110 §15.5.14, 413 for content larger than the
// server will process, and the connection closed (the rest of the body
// is never read).
func TestBodyOverLimit(t *testing.T) { everyMode(t, testBodyOverLimit) }

func testBodyOverLimit(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	r, c := rawRequest(t, ts, "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("x", 1000))
	mustStatus(t, r, 413, "Content-Length: 100000")
	if !closedByServer(c) {
		t.Errorf("413: connection kept open, want closed")
	}
}

// TestTargetTooLong: RFC 9112 §3, "A server that receives a
// request-target longer than any URI it wishes to parse MUST respond with
// a 414 (URI Too Long) status code"; a long header after a short target
// stays 431 (RFC 6585 §5). The loop engine's; over HTTPS and with -engine
// fasthttp, fasthttp's reader calls both 431 (docs/http.md).
func TestTargetTooLong(t *testing.T) {
	ts := messageRoot(t, serverMode{engine: origin.EngineLoop})
	r, _ := rawRequest(t, ts, "GET /a.txt?"+strings.Repeat("q", 8200)+" HTTP/1.1\r\nHost: t\r\n\r\n")
	mustStatus(t, r, 414, "an 8,200-byte target")
	r, _ = rawRequest(t, ts, "GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Pad: "+strings.Repeat("p", 8200)+"\r\n\r\n")
	mustStatus(t, r, 431, "an 8,200-byte field")
}

// TestKeepAliveOnSecondLine: RFC 9112 §9.3, an HTTP/1.0 client asks for a
// persistent connection with "keep-alive" in Connection; RFC 9110 §5.3,
// two Connection lines are one list, so the option counts on either.
func TestKeepAliveOnSecondLine(t *testing.T) { everyMode(t, testKeepAliveOnSecondLine) }

func testKeepAliveOnSecondLine(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	r, c := rawRequest(t, ts, "GET /a.txt HTTP/1.0\r\nConnection: x-foo\r\nConnection: keep-alive\r\n\r\n")
	mustStatus(t, r, 200, "HTTP/1.0, keep-alive on the second Connection line")
	mustHeader(t, r, "Connection", "keep-alive", "HTTP/1.0, keep-alive on the second Connection line")
	if _, err := c.conn.Write([]byte("GET /a.txt HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatalf("second request: %v", err)
	}
	mustBody(t, c.read("GET"), []byte("0123456789"), "second request on the kept connection")
}

// TestTransferEncodingEmptyElements: RFC 9110 §5.6.1, "a recipient MUST
// accept empty list elements ... and ignore them": ",chunked" is chunked.
func TestTransferEncodingEmptyElements(t *testing.T) { everyMode(t, testTransferEncodingEmptyElements) }

func testTransferEncodingEmptyElements(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	for _, te := range []string{",chunked", "chunked,", " , chunked , "} {
		c := ts.dial()
		if _, err := io.WriteString(c.conn, "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "+te+"\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		mustBody(t, c.read("GET"), []byte("0123456789"), "Transfer-Encoding: "+te)
		mustBody(t, c.read("GET"), []byte("0123456789"), "the request after it")
	}
}

// TestTransferCodingNotImplemented: RFC 9112 §6.1, "A server that
// receives a request message with a transfer coding it does not
// understand SHOULD respond with 501 (Not Implemented)"; the lines of the
// field are one list (RFC 9110 §5.3).
func TestTransferCodingNotImplemented(t *testing.T) { everyMode(t, testTransferCodingNotImplemented) }

func testTransferCodingNotImplemented(t *testing.T, mode serverMode) {
	ts := messageRoot(t, mode)
	for _, fields := range []string{"Transfer-Encoding: gzip, chunked\r\n", "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"} {
		r, c := rawRequest(t, ts, "GET /a.txt HTTP/1.1\r\nHost: t\r\n"+fields+"\r\n0\r\n\r\n")
		mustStatus(t, r, 501, fields)
		if !closedByServer(c) {
			t.Errorf("%q: connection kept open after 501, want closed", fields)
		}
	}
	// The same bytes in two writes, the second after the server has
	// read the first (fasthttp refuses the gzip line once the next line
	// begins): the list is judged whole (RFC 9110 §5.3), and a
	// line refused for something else after it makes the answer 400
	// either way.
	for _, tc := range []struct {
		first, rest string
		want        int
	}{
		{"Transfer-Encoding: gzip\r\nT", "ransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
		{"Transfer-Encoding: gzip, chunked\r\n", "X-A: 1\r\nHost: u\r\n\r\n0\r\n\r\n", 400},
	} {
		c := ts.dial()
		if _, err := io.WriteString(c.conn, "GET /a.txt HTTP/1.1\r\nHost: t\r\n"+tc.first); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // read on its own (the answer is the same if not)
		if _, err := io.WriteString(c.conn, tc.rest); err != nil {
			t.Fatal(err)
		}
		mustStatus(t, c.read("GET"), tc.want, tc.first+" then "+tc.rest)
		if !closedByServer(c) {
			t.Errorf("%q then %q: connection kept open after %d, want closed", tc.first, tc.rest, tc.want)
		}
	}
}
