//go:build linux

package loop

import (
	"errors"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/origin/wire"
)

// Conn is one connection of a loop. Its methods run on the loop's thread
// unless they say otherwise.
type Conn struct {
	fd     int
	l      *loop
	in     []byte    // buffered request bytes; nil while idle
	resp   *Response // the response in flight
	events uint32    // the epoll events registered (EPOLLIN reading or idle, EPOLLOUT writing; parked, see park)
	parked bool      // the Handler answers from elsewhere (Park, then Send from Post)
	parkEv uint32    // parked with EPOLLIN kept: what to watch once c is readable (park)
	closed bool
	// closeAfter: close once the response in flight is sent.
	closeAfter bool
	// lingerWanted: the client may still be sending when c closes
	// (LingerOnClose); lingering: c's write side is shut and what
	// arrives is dropped until the client closes (closeAfterResponse).
	lingerWanted, lingering bool
	// sending: a send of the response's memory parts is queued in the
	// poller's ring; sent goes on from its completion.
	sending bool

	list       *list // the timeout list c is in, or nil
	prev, next *Conn
	since      int64 // when c entered list, in nanoseconds

	remote, local *net.TCPAddr

	io       ConnIO // an adopted connection's own read and close (AdoptIO); nil: the plain socket
	wordWait bool   // a clean close waits for room for io's last words (lastWord)

	// Value is the Handler's, for its per-connection state.
	Value any
}

// Response and Part are the HTTP/1 layer's (origin/wire): every
// transport sends the same.
type (
	Response = wire.Response
	Part     = wire.Part
)

// ErrTruncated: a file span ended early (the file shrank while it was
// being sent); the connection closes rather than send fewer bytes than
// announced.
var ErrTruncated = wire.ErrTruncated

// Send starts r on c. It is sent as far as the socket takes it now; the
// rest leaves as the socket drains, and r.Done reports the end.
func (c *Conn) Send(r *Response) {
	if c.closed {
		if r.Done != nil {
			r.Done(0, net.ErrClosed)
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
func (c *Conn) Park() { park(c, 0) }

// ParkUntilGone parks c as Park does, and closes it as soon as the client
// closes its side (its FIN: EPOLLRDHUP, asked of either poller), so a
// request that may wait for seconds (a blocking playlist reload) holds no
// descriptor for a client that has left. The Handler learns of it from
// Closed. As nginx treats a client's FIN while a request waits on its
// upstream (ngx_http_test_reading), a half-close counts as gone: an
// HTTP/1.1 client that still wants its answer keeps its side open.
func (c *Conn) ParkUntilGone() { park(c, unix.EPOLLRDHUP) }

// park is Park, watching c for ev meanwhile (0: errors and hang-ups
// only). A function, not a method: Conn's methods are its API.
//
// A connection that was waiting to read keeps its registration: until
// the client sends more or leaves (its FIN makes it readable too),
// EPOLLIN reports nothing, and only then does the loop switch to ev
// (event). A parked request answered without the client doing either,
// the common case (a blocking reload, an open offloaded to a
// goroutine), then costs no epoll_ctl to park and none to read again
// after its answer, where switching at once cost two.
func park(c *Conn, ev uint32) {
	c.parked = true
	c.l.handedOff = true
	if c.list != nil {
		c.list.remove(c)
	}
	if c.events == unix.EPOLLIN && ev != unix.EPOLLIN {
		c.parkEv = ev
		return
	}
	c.setEvents(ev)
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
	if s := sealer(c); s != nil {
		return s.Seal(p) // sent as far as the socket takes it; the rest before the response (flush)
	}
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

// RemoteAddr is the peer, or the client its PROXY header named.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// netView is a Conn as a net.Conn, for what asks a connection its
// addresses (fasthttp's RequestCtx). Reading and writing go through the
// loop, never these.
type netView struct{ c *Conn }

var _ net.Conn = netView{}

var errNotStream = errors.New("loop: a Conn is read and written by its loop")

func (v netView) Read([]byte) (int, error)         { return 0, errNotStream }
func (v netView) Write([]byte) (int, error)        { return 0, errNotStream }
func (v netView) Close() error                     { v.c.CloseAfter(); return nil }
func (v netView) LocalAddr() net.Addr              { return v.c.local }
func (v netView) RemoteAddr() net.Addr             { return v.c.remote }
func (v netView) SetDeadline(time.Time) error      { return nil }
func (v netView) SetReadDeadline(time.Time) error  { return nil }
func (v netView) SetWriteDeadline(time.Time) error { return nil }

// flush sends what the socket takes of c's response: one send per call
// once the socket is full (a short send), then waits for EPOLLOUT. On
// io_uring the memory parts' send is queued in the ring (the poller's
// send) and flush goes on from its completion (sent).
func (c *Conn) flush() {
	r := c.resp
	l := c.l
	if c.sending {
		return // sent goes on
	}
	if !r.Cursor.Started {
		r.Cursor.Started, r.Cursor.Began = true, l.now
		l.writing.push(c, l.now)
	}
	s := sealer(c)
parts:
	for r.Cursor.Part < len(r.Parts) {
		if s != nil && !flushSealed(c, s) {
			return
		}
		p := &r.Parts[r.Cursor.Part]
		var n, want int64
		var err error
		if p.Mem != nil && s != nil {
			n, want, err = sealMem(c, s, r)
		} else if p.Mem != nil {
			k, w, flags := memIov(r, &l.iov)
			if k > 0 && !l.sendNow && l.p.send(c.fd, l.iov[:k], flags, lastSend(c, r, flags)) {
				c.sending = true
				return
			}
			want = w
			if k > 0 {
				var m int
				m, err = sendmsg(c.fd, l.iov[:k], flags)
				n = int64(m)
			}
		} else {
			budget := r.Allowance(l.now)
			if budget <= 0 {
				c.pace()
				return
			}
			var wait bool
			n, want, wait, err = c.sendFile(r, p, budget)
			if wait {
				l.handedOff = true
				c.setEvents(0)
				return
			}
		}
		if !afterSend(c, r, n, want, err) {
			return
		}
	}
	if s != nil && !flushSealed(c, s) {
		return // More is asked once what was sealed has left
	}
	switch more, ok := r.Next(); {
	case !ok:
		c.setEvents(0) // More will Resume
		return
	case more:
		goto parts
	}
	c.finish(r)
}

// afterSend (a function, as sent) takes in a send of n of the want bytes asked, which ended
// with err: false when c now waits (for room: EPOLLOUT) or has failed.
func afterSend(c *Conn, r *Response, n, want int64, err error) bool {
	l := c.l
	l.e.stats.Sends.Add(1)
	switch {
	case errors.Is(err, unix.EAGAIN):
		c.setEvents(unix.EPOLLOUT)
		return false
	case err != nil:
		l.fail(c, err)
		return false
	}
	r.Cursor.Sent += n
	advance(r, n)
	if n < want {
		l.e.stats.ShortSends.Add(1)
		c.setEvents(unix.EPOLLOUT)
		return false
	}
	return true
}

// sent goes on with c's response after the completion of a send queued
// in the ring: res bytes sent, or -errno. A function, not a method:
// Conn's methods are its API.
func sent(c *Conn, res int32) {
	c.sending = false
	r := c.resp
	if c.closed || r == nil {
		return
	}
	_, want, _ := memIov(r, &c.l.iov)
	var err error
	if res < 0 {
		err, res = unix.Errno(-res), 0
	}
	if !afterSend(c, r, int64(res), want, err) {
		return
	}
	c.flush()
	if !c.closed && c.resp == nil {
		c.l.process(c)
	}
}

// lastSend says whether a send with flags ends c's response with nothing
// waiting on it: no part after it, no More hook, no close, no pipelined
// request buffered.
func lastSend(c *Conn, r *Response, flags int) bool {
	return flags&unix.MSG_MORE == 0 && r.More == nil && !r.Close && !c.closeAfter && len(c.in) == 0 && !c.l.draining
}

// maxSendIov bounds the memory parts one send carries.
const maxSendIov = 8

// memIov points iov at the memory parts from r.Cursor.Part on, up to the
// next file part: k of them (empty ones left out), want bytes in all,
// and the send's flags (MSG_MORE when a file part follows).
func memIov(r *Response, iov *[maxSendIov]unix.Iovec) (k int, want int64, flags int) {
	i := r.Cursor.Part
	for ; i < len(r.Parts) && r.Parts[i].Mem != nil && k < len(iov); i++ {
		m := r.Parts[i].Mem
		if i == r.Cursor.Part {
			m = m[r.Cursor.Off:]
		}
		if len(m) == 0 {
			continue
		}
		iov[k].Base = &m[0]
		iov[k].SetLen(len(m))
		want += int64(len(m))
		k++
	}
	flags = unix.MSG_NOSIGNAL
	if i < len(r.Parts) {
		flags |= unix.MSG_MORE
	}
	return k, want, flags
}

// pace waits, reading nothing and sending nothing, for the next quantum
// of a paced response's allowance (Response.Rate): in the loop's paced
// list, whose wait is PaceQuantum, so the loop's timers wake it and no
// thread sleeps. The write timeout counts again from the wake-up.
func (c *Conn) pace() {
	c.l.paced.push(c, c.l.now)
	c.setEvents(0)
}

// sendFile sends the next window of file part p, at most budget bytes.
// wait: its Ready hook said not yet.
func (c *Conn) sendFile(r *Response, p *Part, budget int64) (n, want int64, wait bool, err error) {
	rem := p.Len - r.Cursor.Off
	want = min(rem, c.l.e.cfg.Window, budget)
	check := noCheck
	if r.Ready != nil {
		check = checkFirst
		if r.Cursor.Off >= r.Cursor.ReadyUntil {
			r.Resident = false
			send, ok := r.Ready(p, p.Off+r.Cursor.Off, want)
			if !ok {
				return 0, 0, true, nil
			}
			r.Cursor.ReadyUntil = r.Cursor.Off + min(max(send, 1), want)
			if claimedResident(r, c.l.now) {
				check = knownResident
			}
			r.Resident = false
		}
		want = min(want, r.Cursor.ReadyUntil-r.Cursor.Off)
	}
	if r.Copied || r.NoSendfile || sealer(c) != nil {
		r.Copied = true
		return copyFile(c, p, r.Cursor.Off, want)
	}
	off := p.Off + r.Cursor.Off
	m, err := sendfile(c.fd, p.Fd, &off, int(want), check)
	switch {
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		r.Copied = true
		if h, ok := c.l.e.cfg.Handler.(interface{ SendfileRefused(*Conn) }); ok {
			h.SendfileRefused(c)
		}
		return copyFile(c, p, r.Cursor.Off, want)
	case err == nil && m == 0:
		return 0, want, false, ErrTruncated
	}
	return int64(max(m, 0)), want, false, err
}

// claimedResident says whether the Ready hook's claim that the window it
// just allowed is resident (Response.Resident) stands: only in the
// wake-up the response began in (now), so that what is sent is what was
// found. Later (the rest of a window a full socket cut short, a window
// after a wait) the page cache is asked again.
func claimedResident(r *Response, now int64) bool {
	return r.Resident && r.Cursor.Began == now
}

// copyFile sends a window of a file the kernel will not sendfile from:
// pread into the loop's buffer, then send what it read.
func copyFile(c *Conn, p *Part, done, want int64) (n, _ int64, wait bool, err error) {
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
	if s := sealer(c); s != nil {
		if err := s.Seal(c.l.copyBuf[:k]); err != nil {
			return 0, int64(k), false, err
		}
		return int64(k), int64(k), false, nil
	}
	m, err := unix.SendmsgN(c.fd, c.l.copyBuf[:k], nil, nil, unix.MSG_NOSIGNAL)
	return int64(max(m, 0)), int64(k), false, err
}

// advance moves r's cursor n bytes on, past parts sent whole (and empty
// ones).
func advance(r *Response, n int64) {
	for r.Cursor.Part < len(r.Parts) {
		left := r.Parts[r.Cursor.Part].Size() - r.Cursor.Off
		if n < left {
			r.Cursor.Off += n
			return
		}
		n -= left
		r.Cursor.Part++
		r.Cursor.Off, r.Cursor.ReadyUntil = 0, 0
	}
}

// setEvents sets what c is watched for: EPOLLIN reading or idle;
// EPOLLOUT while a response waits for room, or 0 (errors only) while
// a Ready or More hook will Resume it: reading stops while a response is
// in flight, or level-triggered EPOLLIN would wake the loop for every
// pipelined byte.
func (c *Conn) setEvents(ev uint32) {
	if c.events == ev {
		return
	}
	c.events = ev
	if err := c.l.p.mod(c.fd, ev); err != nil {
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
		r.Done(r.Cursor.Sent, nil)
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

// State returns the Handler's per-connection state (Value).
func (c *Conn) State() any { return c.Value }

// SetState sets the Handler's per-connection state (Value).
func (c *Conn) SetState(v any) { c.Value = v }

// NetConn is c as a net.Conn, for what asks a connection its addresses.
func (c *Conn) NetConn() net.Conn { return ioView(c, netView{c}) }
