package origin_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// framingShape is one request sequence for the framing test: raw bytes,
// ending in a request with Connection: close, so the server closes once it
// has answered all of them and the whole answer can be read to its end.
type framingShape struct {
	name  string
	raw   string
	codes []int // the statuses, in order, final responses only
}

// closing is the request every shape ends with.
const closing = "GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"

// framingShapes: bodies by Content-Length and chunked, extensions,
// trailers, 100-continue, a body past the 16 KiB read buffer, and a
// request pipelined behind each. A body's bytes must never be read as a
// request (RFC 9112 §6.3, §7.1).
var framingShapes = []framingShape{
	{"content-length body", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello" + closing, []int{200, 200}},
	{"chunked body", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + closing, []int{200, 200}},
	{"chunked, two chunks and an extension", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;name=\"v\"\r\nhel\r\n2;n\r\nlo\r\n0\r\n\r\n" + closing, []int{200, 200}},
	{"chunked with a trailer", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n" + closing, []int{200, 200}},
	// 15 digits: fasthttp's reader (HTTPS, -engine fasthttp) counts
	// leading zeros against its limit and refuses a 16th.
	{"chunked, zero-padded size", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n000000000000005\r\nhello\r\n0\r\n\r\n" + closing, []int{200, 200}},
	{"expect 100-continue", "GET /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody" + closing, []int{200, 200}},
	{"POST with a body is 405, the connection kept", "POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc" + closing, []int{405, 200}},
	{"HTTP/1.0 keep-alive", "GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + closing, []int{200, 200}},
}

// framingBig: a body that takes the request past the loop's 16 KiB read
// buffer (RFC 9112 §6.3: its length is known; the server must read past
// it), by Content-Length and chunked.
func framingBig() []framingShape {
	body := strings.Repeat("x", 20000)
	return []framingShape{
		{"20,000-byte body", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 20000\r\n\r\n" + body + closing, []int{200, 200}},
		{"20,000-byte chunked body", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4e20\r\n" + body + "\r\n0\r\n\r\n" + closing, []int{200, 200}},
	}
}

// TestFraming sends every shape whole, then split in two at every offset
// (a pause between the parts, so the server reads them apart), and small
// ones a byte at a time: the answer must be the same bytes every time
// (Date and an interim 100 Continue aside: RFC 9110 §10.1.1 lets a server
// that already has the content omit it).
func TestFraming(t *testing.T) { everyMode(t, testFraming) }

func testFraming(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", nil)
	// Written an hour ago: a file changed within the second gets the Date
	// as its Last-Modified, which would differ between two exchanges.
	p := writeFile(t, ts.root, "a.txt", "0123456789")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	for _, sh := range append(append([]framingShape(nil), framingShapes...), framingBig()...) {
		t.Run(sh.name, func(t *testing.T) {
			whole := exchange(t, ts, [][]byte{[]byte(sh.raw)})
			checkCodes(t, whole, sh.codes)
			if len(sh.raw) > 1000 {
				// Split at a few offsets that matter: in the header,
				// at its end, inside the body, inside the chunk framing.
				for _, at := range []int{10, strings.Index(sh.raw, "\r\n\r\n") + 2, 16 << 10, len(sh.raw) - len(closing) - 3} {
					got := exchange(t, ts, [][]byte{[]byte(sh.raw[:at]), []byte(sh.raw[at:])})
					sameAnswer(t, got, whole, "split at %d", at)
				}
				return
			}
			for at := 1; at < len(sh.raw); at++ {
				got := exchange(t, ts, [][]byte{[]byte(sh.raw[:at]), []byte(sh.raw[at:])})
				sameAnswer(t, got, whole, "split at %d", at)
			}
			var bytewise [][]byte
			for i := range len(sh.raw) {
				bytewise = append(bytewise, []byte(sh.raw[i:i+1]))
			}
			sameAnswer(t, exchange(t, ts, bytewise), whole, "byte by byte")
		})
	}
}

// exchange writes parts on a fresh connection, pausing between them, and
// returns everything the server sent until it closed, normalised: no Date
// line, no interim 100 Continue.
func exchange(t *testing.T, ts *testServer, parts [][]byte) []byte {
	t.Helper()
	c := ts.dial()
	pause := 2 * time.Millisecond
	if len(parts) > 2 {
		pause = 0 // byte by byte: Nagle is off, each write its own segment
	}
	for i, p := range parts {
		if i > 0 && pause > 0 {
			time.Sleep(pause)
		}
		if _, err := c.conn.Write(p); err != nil {
			t.Fatalf("write part %d: %v", i, err)
		}
	}
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c.br)
	if err != nil && len(got) == 0 {
		t.Fatalf("reading the answer: %v", err)
	}
	return normalise(got)
}

var (
	dateLine    = regexp.MustCompile(`(?m)^Date: [^\r]*\r\n`)
	continueMsg = []byte("HTTP/1.1 100 Continue\r\n\r\n")
)

func normalise(b []byte) []byte {
	b = dateLine.ReplaceAll(b, nil)
	return bytes.ReplaceAll(b, continueMsg, nil)
}

func sameAnswer(t *testing.T, got, want []byte, format string, args ...any) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: answer differs from the whole request's at byte %d:\n got %q\nwant %q",
			fmt.Sprintf(format, args...), firstDiff(got, want), got, want)
	}
}

// checkCodes parses the responses in b and compares their statuses.
func checkCodes(t *testing.T, b []byte, want []int) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(b))
	var got []int
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
		if err != nil {
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	if !equalInts(got, want) {
		t.Fatalf("statuses %v, want %v; answer %q", got, want, trunc(b))
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
