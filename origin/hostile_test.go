package origin_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"segorigin/origin"
)

// rawExchange sends raw bytes on a fresh connection and returns every byte
// the server sends until it closes (or 3 s pass).
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c) // ends with EOF, a reset or the deadline
	return string(b)
}

var statusLine = regexp.MustCompile(`HTTP/1\.1 (\d{3}) `)

func statuses(resp string) string {
	var out []string
	for _, m := range statusLine.FindAllStringSubmatch(resp, -1) {
		out = append(out, m[1])
	}
	return strings.Join(out, ",")
}

// TestHostileRequests: request smuggling shapes, malformed and oversized
// headers, absurd URLs. Each is refused or answered without desynchronising
// the connection; a smuggled request is never answered.
func TestHostileRequests(t *testing.T) {
	ts := startServer(t, "", nil)
	writeFile(t, ts.root, "a.txt", "AAAA")
	writeFile(t, ts.root, "secret.txt", "SECRET")
	smuggled := "GET /secret.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
	manyHeaders := strings.Repeat("X-Pad: "+strings.Repeat("p", 100)+"\r\n", 100)
	tests := []struct {
		name, req, want string // want: the statuses answered, in order
	}{
		// RFC 9112 §6.1: with both, Transfer-Encoding wins and the server
		// MUST close after the response; the smuggled request is body.
		{"content-length and transfer-encoding", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, "200"},
		// §6.3: differing Content-Lengths are unrecoverable: 400 and close.
		{"two content-lengths", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 60\r\n\r\n" + smuggled, "400"},
		{"negative content-length", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n", "400"},
		{"space before colon", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length : 5\r\n\r\nhello", "400"},
		{"unknown transfer-encoding", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\nContent-Length: 3\r\n\r\nabc", "400"},
		// RFC 9112 §6.1: a coding the server does not understand, SHOULD 501.
		{"gzip, chunked", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "501"},
		// A body on GET is read and discarded; the next request is answered.
		{"body on get", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhelloGET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "200,200"},
		{"chunked body on get", "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "200,200"},
		// RFC 9112 §5.2: a server MUST reject an obs-fold with 400 or
		// replace it; replacing lets a front end that reads the folded
		// line as a field of its own disagree about where the message
		// ends. 400, and the connection closes: the smuggled request,
		// which is body to that front end, is never answered.
		{"obs-fold", "GET /a.txt HTTP/1.1\r\nHost: t\r\nX-A: b\r\n c\r\nConnection: close\r\n\r\n", "400"},
		{"obs-fold content-length", "GET /a.txt HTTP/1.1\r\nHost: t\r\nX: y\r\n Content-Length: " + strconv.Itoa(len(smuggled)) + "\r\n\r\n" + smuggled, "400"},
		{"obs-fold with a tab", "GET /a.txt HTTP/1.1\r\nHost: t\r\nX: y\r\n\tz\r\n\r\n" + smuggled, "400"},
		// RFC 9112 §2.2: a recipient MAY recognize a bare LF as a line
		// terminator; segorigin does not (httpmsg.HasBareLF says why),
		// so the message is malformed: 400 and close, at once, not at
		// the read timeout (rawExchange gives up after 3 s).
		{"bare LF", "GET /a.txt HTTP/1.1\nHost: t\n\n", "400"},
		{"bare LF, incomplete", "GET /a.txt HTTP/1.1\nHost: t\n", "400"},
		{"bare LF inside the fields", "GET /a.txt HTTP/1.1\r\nHost: t\r\nX: a\nContent-Length: " + strconv.Itoa(len(smuggled)) + "\r\n\r\n" + smuggled, "400"},
		{"bare LF in a pipelined request", "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\nHost: t\n\n", "200,400"},
		{"no host", "GET /a.txt HTTP/1.1\r\n\r\n", "400"},
		// RFC 9110 §15.6.6: 505 for a major version the server does not
		// support, the HTTP/2 preface's included (RFC 9113 §3.4).
		{"http/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "505"},
		// RFC 9112 §3: a request-target longer than the server parses
		// MUST get 414.
		{"huge url", "GET /" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: t\r\n\r\n", "414"},
		{"huge headers", "GET /a.txt HTTP/1.1\r\nHost: t\r\n" + manyHeaders + "\r\n", "431"},
		// RFC 9110 §9.1: "The method token is case-sensitive": "get" is
		// no method this server recognises: 501, not 405.
		{"lowercase method", "get /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "501"},
		{"nul in path", "GET /a.txt%00 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "400"},
		{"broken escape", "GET /%%%zz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "400"},
		{"absolute-form escape", "GET http://t/../../etc/passwd HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "400"},
		{"range of 7000 digits", "GET /a.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=" + strings.Repeat("0", 7000) + "1-\r\nConnection: close\r\n\r\n", "206"},
		// Control bytes in a field value: fasthttp refuses the request.
		{"control bytes in range", "GET /a.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=\x01\x02-\xff\r\nConnection: close\r\n\r\n", "400"},
		{"range of garbage", "GET /a.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=1-2-3,,x\r\nConnection: close\r\n\r\n", "200"},
		{"if-none-match garbage", "GET /a.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: \"unterminated\r\nConnection: close\r\n\r\n", "200"},
		{"if-modified-since garbage", "GET /a.txt HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: 99 Smarch 99999\r\nConnection: close\r\n\r\n", "200"},
		{"authorization 6000 bytes", "GET /a.txt HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + strings.Repeat("x", 6000) + "\r\nConnection: close\r\n\r\n", "200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := rawExchange(t, ts.addr, tt.req)
			if got := statuses(resp); got != tt.want {
				t.Errorf("statuses %q, want %q; response:\n%s", got, tt.want, trunc([]byte(resp)))
			}
			if strings.Contains(resp, "SECRET") {
				t.Errorf("a smuggled request was answered:\n%s", resp)
			}
		})
	}
}

// TestRefusalNotResetAway: a request refused before it was read to its
// end (a header too large, a body too large), its client still sending,
// gets its answer and then a FIN, not a reset: closing a socket with
// unread bytes makes the kernel send RST, which can destroy the answer
// before the client reads it. RFC 9112 §9.6: a server "SHOULD NOT close
// the connection ... until it has received a reply ... or it has read all
// of the request"; the loop engine lingers, reading and dropping, as
// nginx's lingering_close does.
func TestRefusalNotResetAway(t *testing.T) {
	ts := startServer(t, "", nil)
	writeFile(t, ts.root, "a.txt", "AAAA")
	junk := strings.Repeat("j", 512<<10)
	for _, tt := range []struct{ name, req, want string }{
		{"header too large", "GET /a.txt HTTP/1.1\r\nHost: t\r\nX: " + strings.Repeat("a", 20000) + "\r\n\r\n" + junk, "431"},
		{"bare LF, then a body", "GET /a.txt HTTP/1.1\nHost: t\nContent-Length: 524288\n\n" + junk, "400"},
		{"body too large", "GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: " + strconv.Itoa(len(junk)) + "\r\n\r\n" + junk, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			// The client writes while it reads, as one that streams its
			// request does; the server answers before it has all of it.
			werr := make(chan error, 1)
			go func() {
				_, err := io.WriteString(c, tt.req)
				werr <- err
			}()
			b, err := io.ReadAll(c)
			if err != nil {
				t.Errorf("reading the answer: %v (want the answer, then the server's FIN)", err)
			}
			got := statuses(string(b))
			if tt.want != "" && got != tt.want || tt.want == "" && (got == "" || got[0] != '4') {
				t.Errorf("statuses %q, want %q; response:\n%s", got, tt.want, trunc(b))
			}
			if err := <-werr; err != nil {
				t.Errorf("writing the request: %v (the server reset the connection)", err)
			}
		})
	}
	// The linger is bounded: a client that keeps its side open and keeps
	// sending is closed after it (its writes then fail).
	t.Run("client never closes", func(t *testing.T) {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, "GET /a.txt HTTP/1.1\nHost: t\n\n"); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(c); err != nil || statuses(string(b)) != "400" {
			t.Fatalf("answer %q, err %v; want 400 then the server's FIN", trunc(b), err)
		}
		var werr error
		for i := 0; i < 150 && werr == nil; i++ { // 15 s at most
			time.Sleep(100 * time.Millisecond)
			_, werr = io.WriteString(c, "more")
		}
		if werr == nil {
			t.Errorf("a lingering connection still takes bytes 15 s after its answer: never closed")
		}
	})
}

// TestSlowloris: a thousand connections trickling their headers do not stop
// normal clients from being served, and the read timeout ends them.
func TestSlowloris(t *testing.T) {
	ts := startServer(t, "", func(c *origin.Config) { c.ReadTimeout = 2 * time.Second })
	writeFile(t, ts.root, "a.txt", "AAAA")
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for range 1000 {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("dial slow connection: %v", err)
		}
		io.WriteString(c, "GET /a.txt HTTP/1.1\r\nHost: t\r\n")
		slow = append(slow, c)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // trickle one header byte per connection every 100ms
		for range 15 {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for _, c := range slow {
				c.Write([]byte("X"))
			}
		}
	})
	for i := range 50 {
		c := ts.dial()
		c.conn.SetDeadline(time.Now().Add(5 * time.Second))
		mustBody(t, c.do("GET", "/a.txt"), []byte("AAAA"), fmt.Sprintf("normal request %d among 1000 slow ones", i))
	}
	close(stop)
	wg.Wait()
	// The read timeout closes the trickling connections (with 408 or not).
	closed := 0
	for _, c := range slow {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		if len(b) == 0 || bytes.Contains(b, []byte(" 408 ")) {
			closed++
		}
	}
	if closed != len(slow) {
		t.Errorf("%d of %d slow connections ended by the server", closed, len(slow))
	}
}

// TestConnectionLimits: a flood of idle connections from one address is
// bounded by -max-conns (the rest refused at accept) and ended by the
// read timeout, after which other clients are served. -max-conns-per-ip
// does not bound idle connections: like nginx's limit_conn it counts
// requests in progress (TestClientLimit); an address flooding idle
// connections is for the firewall (connlimit) to bound.
func TestConnectionLimits(t *testing.T) {
	ts := startServer(t, "", func(c *origin.Config) {
		c.MaxConnsPerIP = 50
		c.MaxConns = 120
		// Long enough that no flood connection times out (freeing its
		// place for one the count expects refused) before the 200 dials
		// are made, on a loaded machine too.
		c.ReadTimeout = 5 * time.Second
	})
	writeFile(t, ts.root, "a.txt", "AAAA")
	flooder := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range 200 {
		c, err := flooder.Dial("tcp", ts.addr)
		if err != nil {
			// The server resets refused connections at once, sometimes
			// before connect returns.
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("dial from 127.0.0.2: %v", err)
			}
			continue
		}
		flood = append(flood, c)
	}
	waitFor(t, 30*time.Second, "80 refused at accept", func() bool { return ts.srv.Stats().ConnsRefused == 80 })
	if n := ts.srv.Stats().ConnsOpen; n > 120 {
		t.Errorf("%d connections open, over max-conns 120", n)
	}
	waitFor(t, 30*time.Second, "the idle flood ended by the read timeout", func() bool { return ts.srv.Stats().ConnsOpen == 0 })
	mustBody(t, ts.get("/a.txt"), []byte("AAAA"), "normal client after the flood")
	if n := ts.srv.Stats().ClientLimited; n != 0 {
		t.Errorf("ClientLimited = %d: idle connections counted as requests", n)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
