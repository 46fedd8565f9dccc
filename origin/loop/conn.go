//go:build linux

package loop

import (
	"errors"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is one connection of a loop. Its methods run on the loop's thread
// unless they say otherwise.
type Conn struct {
	fd     int
	l      *loop
	in     []byte    // buffered request bytes; nil while idle
	resp   *Response // the response in flight
	events uint32    // the epoll events registered (EPOLLIN reading or idle, EPOLLOUT writing, none parked)
	parked bool      // the Handler answers from elsewhere (Park, then Send from Post)
	closed bool
	// closeAfter: close once the response in flight is sent.
	closeAfter bool
	// lingerWanted: the client may still be sending when c closes
	// (LingerOnClose); lingering: c's write side is shut and what
	// arrives is dropped until the client closes (closeAfterResponse).
	lingerWanted, lingering bool

	list       *list // the timeout list c is in, or nil
	prev, next *Conn
	since      int64 // when c entered list, in nanoseconds

	remote, local *net.TCPAddr

	// Value is the Handler's, for its per-connection state.
	Value any
}

// Response is a response to send: memory parts and file spans, in order.
// The Handler owns it (and what its parts point to) until Done.
type Response struct {
	Parts []Part
	// Close closes the connection once the response is sent.
	Close bool
	// Ready, when set, is asked before each sendfile window of up to
	// Config.Window bytes at off: it returns how much of it may be sent
	// now without waiting for storage. ok false means "not yet": the
	// Handler calls Conn.Resume once it may be asked again.
	Ready func(c *Conn, p *Part, off, n int64) (send int64, ok bool)
	// NoSendfile sends file spans by pread and send (-disable-sendfile).
	NoSendfile bool
	// Done is called once, on the loop's thread, when the response has
	// been handed to the kernel (err nil) or has failed (err set; the
	// connection then closes). sent counts the bytes sent.
	Done func(c *Conn, sent int64, err error)

	part       int   // the part being sent
	off        int64 // how much of it is sent
	readyUntil int64 // how far into the part Ready has allowed sending
	sent       int64
	started    bool // the write timeout runs
	copy       bool // the file system refused sendfile: spans go by pread and send
}

// Part is a span of memory (Mem) or, when Mem is nil, Len bytes of the
// file Fd from Off.
type Part struct {
	Mem []byte
	Fd  int
	Off int64
	Len int64
}

// Copied reports whether file spans went by pread and send rather than
// sendfile.
func (r *Response) Copied() bool { return r.copy }

// Reset clears r for reuse, keeping its Parts capacity.
func (r *Response) Reset() {
	*r = Response{Parts: r.Parts[:0]}
}

// ErrTruncated: a file span ended early (the file shrank while it was
// being sent); the connection closes rather than send fewer bytes than
// announced.
var ErrTruncated = errors.New("loop: file shorter than the span announced")

// Send starts r on c. It is sent as far as the socket takes it now; the
// rest leaves as the socket drains, and r.Done reports the end.
func (c *Conn) Send(r *Response) {
	if c.closed {
		if r.Done != nil {
			r.Done(c, 0, net.ErrClosed)
		}
		return
	}
	c.parked = false
	c.resp = r
	if c.list != nil {
		c.list.remove(c)
	}
}

// Park says the Handler will Send c's response later, from Post: the
// connection waits (no read, no timeout of its own) until then.
func (c *Conn) Park() {
	c.parked = true
	if c.list != nil {
		c.list.remove(c)
	}
	c.setEvents(0)
}

// Post runs fn on c's loop thread (also when c has closed by then: fn
// checks Closed, and a Send on a closed Conn reports Done at once). Safe
// from any goroutine.
func (c *Conn) Post(fn func()) { c.l.post(fn) }

// Resume continues c's response after its Ready hook answered "not yet".
// Safe from any goroutine.
func (c *Conn) Resume() { c.l.post(c.Continue) }

// Continue runs the loop's processing of c after a Post that Sent, or
// after Resume: the response goes on, and pipelined requests follow once
// it is done. A connection still parked waits for its Send.
func (c *Conn) Continue() {
	if c.closed {
		return
	}
	if c.resp != nil {
		c.flush()
		if c.closed || c.resp != nil {
			return
		}
	}
	c.l.process(c)
}

// Grow makes room for a request of n bytes in c's buffer.
func (c *Conn) Grow(n int) {
	if cap(c.in) >= n {
		return
	}
	b := make([]byte, len(c.in), n)
	copy(b, c.in)
	c.l.putBuf(c.in)
	c.in = b
}

// WriteNow writes p at once, as far as the socket takes it (a 100
// Continue: small, and sent while nothing else is in flight).
func (c *Conn) WriteNow(p []byte) error {
	n, err := unix.Write(c.fd, p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// CloseAfter closes c once its response in flight (or, with none, its
// buffered bytes) is done.
func (c *Conn) CloseAfter() { c.closeAfter = true }

// Abort closes c at once, with a reset (SO_LINGER 0) when reset is set:
// for a connection refused at accept.
func (c *Conn) Abort(reset bool) {
	if reset {
		c.Reset()
	}
	c.l.close(c)
}

// Reset makes c's close a reset (SO_LINGER 0): for a connection refused
// at accept, which then costs the server no TIME_WAIT.
func (c *Conn) Reset() {
	unix.SetsockoptLinger(c.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

// Closed reports whether c has closed.
func (c *Conn) Closed() bool { return c.closed }

// Draining reports whether c's engine is shutting down.
func (c *Conn) Draining() bool { return c.l.e.draining.Load() }

// SetRemote replaces the peer address (the client a PROXY header named).
func (c *Conn) SetRemote(a *net.TCPAddr) { c.remote = a }

// net.Conn, for what asks a connection its addresses (fasthttp's
// RequestCtx). Reading and writing go through the loop, never these.
var _ net.Conn = (*Conn)(nil)

var errNotStream = errors.New("loop: a Conn is read and written by its loop")

func (c *Conn) Read([]byte) (int, error)         { return 0, errNotStream }
func (c *Conn) Write([]byte) (int, error)        { return 0, errNotStream }
func (c *Conn) Close() error                     { c.CloseAfter(); return nil }
func (c *Conn) LocalAddr() net.Addr              { return c.local }
func (c *Conn) RemoteAddr() net.Addr             { return c.remote }
func (c *Conn) SetDeadline(time.Time) error      { return nil }
func (c *Conn) SetReadDeadline(time.Time) error  { return nil }
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }

// flush sends what the socket takes of c's response: one send per call
// once the socket is full (a short send), then waits for EPOLLOUT.
func (c *Conn) flush() {
	r := c.resp
	l := c.l
	if !r.started {
		r.started = true
		l.writing.push(c, l.now)
	}
	for r.part < len(r.Parts) {
		p := &r.Parts[r.part]
		var n int64
		var want int64
		var err error
		if p.Mem != nil {
			n, want, err = c.sendMem(r)
		} else {
			var wait bool
			n, want, wait, err = c.sendFile(r, p)
			if wait {
				c.waitWritable(false)
				return
			}
		}
		l.e.stats.Sends.Add(1)
		switch {
		case errors.Is(err, unix.EAGAIN):
			c.waitWritable(true)
			return
		case err != nil:
			l.fail(c, err)
			return
		}
		r.sent += n
		c.advance(r, n)
		if n < want {
			l.e.stats.ShortSends.Add(1)
			c.waitWritable(true)
			return
		}
	}
	c.finish(r)
}

// sendMem sends the memory parts from r.part on, up to the next file part,
// in one sendmsg; MSG_MORE when a file part follows.
func (c *Conn) sendMem(r *Response) (n, want int64, err error) {
	var iov [8]unix.Iovec
	k := 0
	i := r.part
	for ; i < len(r.Parts) && r.Parts[i].Mem != nil && k < len(iov); i++ {
		m := r.Parts[i].Mem
		if i == r.part {
			m = m[r.off:]
		}
		if len(m) == 0 {
			continue
		}
		iov[k].Base = &m[0]
		iov[k].SetLen(len(m))
		want += int64(len(m))
		k++
	}
	if k == 0 {
		return 0, 0, nil
	}
	flags := unix.MSG_NOSIGNAL
	if i < len(r.Parts) {
		flags |= unix.MSG_MORE
	}
	m, err := sendmsg(c.fd, iov[:k], flags)
	return int64(m), want, err
}

// sendFile sends the next window of file part p. wait: its Ready hook
// said not yet.
func (c *Conn) sendFile(r *Response, p *Part) (n, want int64, wait bool, err error) {
	rem := p.Len - r.off
	want = min(rem, c.l.e.cfg.Window)
	if r.Ready != nil {
		if r.off >= r.readyUntil {
			send, ok := r.Ready(c, p, p.Off+r.off, want)
			if !ok {
				return 0, 0, true, nil
			}
			r.readyUntil = r.off + min(max(send, 1), want)
		}
		want = min(want, r.readyUntil-r.off)
	}
	if r.copy || r.NoSendfile {
		r.copy = true
		return c.copyFile(p, r.off, want)
	}
	off := p.Off + r.off
	m, err := unix.Sendfile(c.fd, p.Fd, &off, int(want))
	switch {
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		r.copy = true
		if h, ok := c.l.e.cfg.Handler.(interface{ SendfileRefused(*Conn) }); ok {
			h.SendfileRefused(c)
		}
		return c.copyFile(p, r.off, want)
	case err == nil && m == 0:
		return 0, want, false, ErrTruncated
	}
	return int64(max(m, 0)), want, false, err
}

// copyFile sends a window of a file the kernel will not sendfile from:
// pread into the loop's buffer, then send what it read.
func (c *Conn) copyFile(p *Part, done, want int64) (n, _ int64, wait bool, err error) {
	if c.l.copyBuf == nil {
		c.l.copyBuf = make([]byte, 64<<10)
	}
	want = min(want, int64(len(c.l.copyBuf)))
	k, err := unix.Pread(p.Fd, c.l.copyBuf[:want], p.Off+done)
	if err != nil {
		return 0, want, false, err
	}
	if k == 0 {
		return 0, want, false, ErrTruncated
	}
	m, err := unix.SendmsgN(c.fd, c.l.copyBuf[:k], nil, nil, unix.MSG_NOSIGNAL)
	return int64(max(m, 0)), int64(k), false, err
}

// advance moves r's cursor n bytes on, past parts sent whole (and empty
// ones).
func (c *Conn) advance(r *Response, n int64) {
	for r.part < len(r.Parts) {
		left := partLen(&r.Parts[r.part]) - r.off
		if n < left {
			r.off += n
			return
		}
		n -= left
		r.part++
		r.off, r.readyUntil = 0, 0
	}
}

func partLen(p *Part) int64 {
	if p.Mem != nil {
		return int64(len(p.Mem))
	}
	return p.Len
}

// waitWritable waits for EPOLLOUT (out) or for nothing but errors (a
// Ready hook will Resume): reading stops while a response is in flight,
// or level-triggered EPOLLIN would wake the loop for every pipelined
// byte.
func (c *Conn) waitWritable(out bool) {
	var ev uint32
	if out {
		ev = unix.EPOLLOUT
	}
	c.setEvents(ev)
}

func (c *Conn) setEvents(ev uint32) {
	if c.events == ev {
		return
	}
	c.events = ev
	if err := unix.EpollCtl(c.l.epfd, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: ev, Fd: int32(c.fd)}); err != nil {
		c.l.fail(c, err)
	}
}

// finish ends a response that has been sent whole.
func (c *Conn) finish(r *Response) {
	c.resp = nil
	if c.list == &c.l.writing {
		c.l.writing.remove(c)
	}
	closeConn := r.Close // r is the Handler's again once Done runs
	if r.Done != nil {
		r.Done(c, r.sent, nil)
	}
	if c.closed {
		return
	}
	if closeConn || c.closeAfter {
		c.l.closeAfterResponse(c)
		return
	}
	c.setEvents(unix.EPOLLIN)
	if c.closed {
		return
	}
	c.l.settle(c)
}

// list is a timeout list: connections in the order their wait began, all
// with the same timeout, so the head expires first.
type list struct {
	head, tail *Conn
	timeout    time.Duration
}

func (ls *list) push(c *Conn, now int64) {
	if c.list != nil {
		c.list.remove(c)
	}
	if ls.timeout <= 0 {
		return
	}
	c.list, c.since, c.prev, c.next = ls, now, ls.tail, nil
	if ls.tail != nil {
		ls.tail.next = c
	} else {
		ls.head = c
	}
	ls.tail = c
}

func (ls *list) remove(c *Conn) {
	if c.list != ls {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		ls.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		ls.tail = c.prev
	}
	c.list, c.prev, c.next = nil, nil, nil
}

func (ls *list) expired(c *Conn, now int64) bool {
	return now-c.since >= int64(ls.timeout)
}

func (ls *list) nextDeadline() (int64, bool) {
	if ls.head == nil {
		return 0, false
	}
	return ls.head.since + int64(ls.timeout), true
}
