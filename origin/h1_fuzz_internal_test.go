//go:build linux

package origin

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"segorigin/origin/wire"
)

// fakeConn is a connection of the HTTP/1 layer with no socket: what the
// layer sends is collected in out, as a transport would put it on the
// wire. It is driven like the stream transport drives a connection.
type fakeConn struct {
	t       testing.TB
	state   any
	in      []byte
	size    int // the buffer's capacity (Grow raises it)
	resp    *wire.Response
	parked  bool
	closed  bool
	resumed bool
	posts   chan func()
	out     bytes.Buffer
}

func newFakeConn(t testing.TB, size int) *fakeConn {
	return &fakeConn{t: t, size: size, posts: make(chan func(), 16), state: &h1ConnState{}}
}

func (c *fakeConn) NetConn() net.Conn           { return c }
func (c *fakeConn) State() any                  { return c.state }
func (c *fakeConn) SetState(v any)              { c.state = v }
func (c *fakeConn) SetRemote(*net.TCPAddr)      {}
func (c *fakeConn) Grow(n int)                  { c.size = max(c.size, n) }
func (c *fakeConn) WriteNow(p []byte) error     { c.out.Write(p); return nil }
func (c *fakeConn) Park()                       { c.parked = true }
func (c *fakeConn) Post(fn func())              { c.posts <- fn }
func (c *fakeConn) Continue()                   { c.resumed = true }
func (c *fakeConn) Abort(bool)                  { c.closed = true }
func (c *fakeConn) Reset()                      {}
func (c *fakeConn) LingerOnClose()              {}
func (c *fakeConn) Closed() bool                { return c.closed }
func (c *fakeConn) Draining() bool              { return false }
func (c *fakeConn) Read([]byte) (int, error)    { return 0, io.EOF }
func (c *fakeConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *fakeConn) Close() error                { return nil }
func (c *fakeConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
func (c *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fakeConn) SetDeadline(time.Time) error     { return nil }
func (c *fakeConn) SetReadDeadline(time.Time) error { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error {
	return nil
}

func (c *fakeConn) Send(r *wire.Response) {
	if c.closed {
		if r.Done != nil {
			r.Done(0, net.ErrClosed)
		}
		return
	}
	c.parked, c.resp = false, r
}

// wait runs posted work until cond holds; a layer that never posts back
// fails the test.
func (c *fakeConn) wait(cond func() bool) {
	for !cond() && !c.closed {
		select {
		case fn := <-c.posts:
			fn()
		case <-time.After(10 * time.Second):
			c.t.Fatalf("the HTTP/1 layer parked a connection and never posted back")
		}
	}
}

// feed appends b (as far as the buffer takes it, the rest after the layer
// consumed) and lets the layer answer what it can.
func (c *fakeConn) feed(ls *h1Server, b []byte) {
	for len(b) > 0 && !c.closed {
		k := min(len(b), c.size-len(c.in))
		if k == 0 && len(c.in) < c.size {
			break
		}
		c.in = append(c.in, b[:k]...)
		b = b[k:]
		c.process(ls)
		if k == 0 {
			break
		}
	}
}

func (c *fakeConn) process(ls *h1Server) {
	for !c.closed && c.resp == nil && len(c.in) > 0 {
		full := len(c.in) >= c.size
		n := ls.data(c, c.in, full)
		if c.closed {
			return
		}
		if n < 0 || n > len(c.in) {
			c.t.Fatalf("data consumed %d of %d bytes", n, len(c.in))
		}
		c.in = c.in[n:]
		c.wait(func() bool { return !c.parked })
		if c.resp != nil {
			c.send()
			continue
		}
		if n == 0 {
			if full && len(c.in) >= c.size {
				c.closed = true
			}
			return
		}
	}
}

// send puts the response on "the wire": memory parts as they are, file
// spans read with pread.
func (c *fakeConn) send() {
	r := c.resp
	c.resp = nil
	var err error
	for i := range r.Parts {
		p := &r.Parts[i]
		if p.Mem != nil {
			c.out.Write(p.Mem)
			r.Cursor.Sent += int64(len(p.Mem))
			continue
		}
		if r.Ready != nil {
			for off := int64(0); off < p.Len; {
				want := p.Len - off
				send, ok := r.Ready(p, p.Off+off, want)
				for !ok {
					c.resumed = false
					c.wait(func() bool { return c.resumed })
					send, ok = r.Ready(p, p.Off+off, want)
				}
				off += max(send, 1)
			}
		}
		buf := make([]byte, p.Len)
		k, perr := syscall.Pread(p.Fd, buf, p.Off)
		c.out.Write(buf[:max(k, 0)])
		r.Cursor.Sent += int64(max(k, 0))
		if perr != nil || int64(k) < p.Len {
			err = errors.Join(perr, wire.ErrTruncated)
			break
		}
	}
	closeConn := r.Close // r is the layer's again once Done runs
	if r.Done != nil {
		r.Done(r.Cursor.Sent, err)
	}
	if err != nil || closeConn {
		c.closed = true
	}
}

var (
	fuzzDateLine = regexp.MustCompile(`(?m)^Date: [^\r]*\r\n`)
	fuzzContinue = []byte("HTTP/1.1 100 Continue\r\n\r\n")
	fuzzBoundary = regexp.MustCompile(`boundary=([0-9a-f]{30})`)
)

// answer is what a client reads, Date, interim 100 Continue (RFC 9110
// §10.1.1: a server that has the content may omit it) and the random
// multipart boundaries (replaced by one of the same length) aside.
func (c *fakeConn) answer() []byte {
	b := fuzzDateLine.ReplaceAll(c.out.Bytes(), nil)
	b = bytes.ReplaceAll(b, fuzzContinue, nil)
	for _, m := range fuzzBoundary.FindAllSubmatch(b, -1) {
		b = bytes.ReplaceAll(b, m[1], bytes.Repeat([]byte("b"), len(m[1])))
	}
	return b
}

// fuzzServer is a server over a root with a small file (inlined) and a
// larger one, with no cold path and no watcher: the HTTP/1 layer alone.
func fuzzServer(f testing.TB) *h1Server {
	root := f.TempDir()
	old := time.Now().Add(-time.Hour)
	for name, size := range map[string]int{"a.txt": 10, "big.bin": 40000} {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), size), 0o644); err != nil {
			f.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			f.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.Root, cfg.Settle, cfg.Watch, cfg.ColdReaders = root, 0, false, 0
	cfg.ReadAhead.Readers = 0
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	return s.h.newH1Server(nil)
}

// FuzzRequestPath: raw bytes through the whole request path (the HTTP/1
// layer, the handler, the file cache). Invariants: no panic; the answer
// is a sequence of whole HTTP/1.1 responses, nothing else; bytes never
// sent get no answer; and the answer (and whether the connection ends) is
// the same whether the bytes arrive at once, split at any offset, or one
// by one: the framing is consumed exactly, wherever reads fall.
func FuzzRequestPath(f *testing.F) {
	ls := fuzzServer(f)
	for _, seed := range []string{
		"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
		"GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-9,30000-30009\r\n\r\nHEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
		"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhelloGET /a.txt HTTP/1.0\r\n\r\n",
		"GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;x=\"y\"\r\nhello\r\n0\r\nT: 1\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\n\r\n",
		"GET /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
		"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ,chunked\r\n\r\n0\r\n\r\n",
		"GET /a.txt HTTP/1.1\nHost: t\n\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET /a.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: \"x\"\r\nIf-None-Match: *\r\n\r\n",
		"GET http:///a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
	} {
		f.Add([]byte(seed), uint16(7))
	}
	// A request refused before its Transfer-Encoding line arrives is 400
	// whether or not that line, which alone would make it 501, comes
	// with it: a request line with no version, a field name ending in a
	// space.
	f.Add([]byte("GET /\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), uint16(7))
	f.Add([]byte("GET / HTTP/1.1\r\nX : y\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), uint16(24))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: t\r\nHost: u\r\nTransfer-Encoding: x,chunked\r\n\r\n"), uint16(35))
	// fasthttp refuses a coding's line as the next begins: the list
	// is judged once the header is whole.
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), uint16(42))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nHost: t\r\nHost: u\r\n\r\n"), uint16(51))
	// A bare CR whose line then ends in a bare LF: the line is left out
	// whichever of the two refused it.
	f.Add([]byte("0 / HTTP/1.0\r\nTrAnsfer-EnCoding:00,Chunked\r0\n"), uint16(44))
	// A field name ending in a space, refused by fasthttp once the next
	// line begins, before a line that ends in a bare LF.
	f.Add([]byte("GET / HTTP/1.0\r\nTransfer-Encoding:gzip, chunked\r\nHos :00\r\n0\n"), uint16(51))
	f.Fuzz(func(t *testing.T, raw []byte, split uint16) {
		if len(raw) > 4096 {
			return
		}
		// A small first buffer, so that the inputs also grow it.
		const size = 64
		whole := newFakeConn(t, size)
		whole.feed(ls, raw)
		if len(raw) == 0 && whole.out.Len() > 0 {
			t.Fatalf("an answer to nothing: %q", whole.out.Bytes())
		}
		checkResponses(t, whole.answer())
		at := int(split) % (len(raw) + 1)
		two := newFakeConn(t, size)
		two.feed(ls, raw[:at])
		two.feed(ls, raw[at:])
		if !bytes.Equal(two.answer(), whole.answer()) || two.closed != whole.closed {
			t.Fatalf("split at %d: answer %q (closed %v), whole %q (closed %v)", at, two.answer(), two.closed, whole.answer(), whole.closed)
		}
		if len(raw) <= 256 {
			one := newFakeConn(t, size)
			for i := range raw {
				one.feed(ls, raw[i:i+1])
			}
			if !bytes.Equal(one.answer(), whole.answer()) || one.closed != whole.closed {
				t.Fatalf("byte by byte: answer %q (closed %v), whole %q (closed %v)", one.answer(), one.closed, whole.answer(), whole.closed)
			}
		}
	})
}

// checkResponses: b is whole HTTP/1.1 responses back to back, each with a
// status line and a body of its Content-Length.
func checkResponses(t *testing.T, b []byte) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(b))
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return
		}
		// HEAD answers carry a Content-Length and no body; the request
		// method is not known here, so a body is read only when bytes
		// for it are there and do not start a status line.
		resp, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
		if err != nil {
			t.Fatalf("not a response at %d bytes from the end: %v\n%q", br.Buffered(), err, b)
		}
		if resp.ProtoMajor != 1 || resp.ProtoMinor != 1 {
			t.Fatalf("status line of %s", resp.Proto)
		}
		n := resp.ContentLength
		if peek, _ := br.Peek(min(br.Buffered(), 9)); n > 0 && len(peek) > 0 && !bytes.HasPrefix(peek, []byte("HTTP/1.1 ")) {
			if _, err := io.CopyN(io.Discard, br, n); err != nil {
				t.Fatalf("body shorter than its Content-Length %d: %v\n%q", n, err, b)
			}
		}
	}
}

// TestBufferGrowsAsBytesArrive: a request still arriving holds a buffer of
// what it has sent, not of -max-header-bytes (1 MiB here: 2,000 such
// connections would otherwise hold 2 GiB); one whose header outgrows the
// first buffer is still read whole and answered.
func TestBufferGrowsAsBytesArrive(t *testing.T) {
	ls := fuzzServer(t)
	ls.s.cfg.MaxHeaderBytes = 1 << 20
	partial := newFakeConn(t, h1FirstBuffer)
	partial.feed(ls, []byte("GET /a.txt HTTP/1.1\r\nHost: t\r\nUser-Agent: "+string(bytes.Repeat([]byte("u"), 50))+"\r\n"))
	if partial.size != h1FirstBuffer || partial.out.Len() != 0 {
		t.Fatalf("a 93-byte partial request: buffer %d bytes, answer %q; want %d, none", partial.size, partial.out.Bytes(), h1FirstBuffer)
	}
	big := newFakeConn(t, h1FirstBuffer)
	big.feed(ls, []byte("GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Pad: "+string(bytes.Repeat([]byte("p"), 20000))+"\r\n\r\n"))
	if !bytes.HasPrefix(big.out.Bytes(), []byte("HTTP/1.1 200 OK\r\n")) || big.size < 20000 {
		t.Fatalf("a 20 KB header: buffer %d bytes, answer %.40q; want it grown and 200", big.size, big.out.Bytes())
	}
}
