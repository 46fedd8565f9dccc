package stream

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"segorigin/origin/conn"
	"segorigin/origin/wire"
)

// lingerTimeout bounds how long a connection closed by the server keeps
// reading (and dropping) what its client still sends after its write side
// is shut; nginx's lingering_timeout, and the event loops', is 5 s.
const lingerTimeout = 5 * time.Second

// copyChunk is one pread and write of a span that cannot go by sendfile:
// on userspace TLS, four full records, which the TLS connection seals
// and sends in one write.
const copyChunk = 64 << 10

// Conn is one connection. Its methods run on its goroutine unless they
// say otherwise.
type Conn struct {
	s  *Server
	nc net.Conn

	in       []byte         // buffered request bytes
	reqStart time.Time      // when the first byte of the request in c.in arrived
	resp     *wire.Response // the response to send next
	state    any
	remote   net.Addr // set by SetRemote; nil: nc's

	parked, closed, closeAfter, lingerWanted bool
	resumed                                  bool   // Continue ran since the last wait
	watchPeer                                bool   // ParkUntilGone: watch for the client leaving while parked
	watchID                                  uint64 // its entry in the server's peerWatch; 0: none
	idle                                     atomic.Bool

	box mailbox // work posted from other goroutines

	out sender
	raw syscall.RawConn // the plain socket, for waiting without a buffer
}

// serve is the connection's goroutine: read, hand what arrived to the
// Handler, send what it answers, until the connection closes.
func (c *Conn) serve() {
	defer c.s.untrack(c)
	h := c.s.cfg.Handler
	defer func() {
		c.close()
		h.Closed(c)
		c.box.end()
	}()
	if !h.Accept(c) {
		return
	}
	for first := true; !c.closed; first = false {
		c.process()
		switch {
		case c.closed:
			return
		case c.closeAfter:
			closeAfterResponse(c)
			return
		case len(c.in) == 0 && c.s.draining.Load():
			return
		}
		if !c.read(first) {
			return
		}
	}
}

// read reads once into the buffer, with the deadline of what c waits
// for: the first request (and the TLS handshake before it) or the rest of
// one under ReadTimeout, the next under IdleTimeout. false: c is done.
func (c *Conn) read(first bool) bool {
	cfg := &c.s.cfg
	if c.in != nil && len(c.in) == cap(c.in) {
		return true // process answers or closes
	}
	idle := len(c.in) == 0
	var deadline time.Time
	switch {
	case !idle && cfg.ReadTimeout > 0:
		deadline = c.reqStart.Add(cfg.ReadTimeout)
	case idle && first && cfg.ReadTimeout > 0:
		deadline = time.Now().Add(cfg.ReadTimeout)
	case idle && cfg.IdleTimeout > 0:
		deadline = time.Now().Add(cfg.IdleTimeout)
	}
	c.nc.SetReadDeadline(deadline)
	if idle {
		// Shutdown wakes an idle connection by its deadline: the flag
		// is set before the drain is checked, so one of the two sees
		// the other.
		c.idle.Store(true)
		if c.s.draining.Load() {
			return false
		}
	}
	n, err := c.readOnce(idle)
	c.idle.Store(false)
	if n > 0 {
		if len(c.in) == 0 {
			c.reqStart = time.Now()
		}
		c.in = c.in[:len(c.in)+n]
	}
	if err == nil {
		return true
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && !c.s.draining.Load() {
		c.s.cfg.Handler.Timeout(c, len(c.in) > 0)
		if c.resp != nil && !c.closed {
			c.flush()
		}
	}
	return false
}

// readOnce reads what has arrived into c's buffer. On a plain socket it
// reads through the RawConn: a read that finds nothing gives an idle
// connection's buffer back before it waits, so an idle connection holds
// none (as on the event loops), at no extra system call. Over TLS it reads
// through crypto/tls, which may hold plaintext already.
func (c *Conn) readOnce(idle bool) (int, error) {
	if c.raw == nil {
		if sc, ok := c.nc.(*conn.TCP); ok {
			if raw, err := sc.SyscallConn(); err == nil {
				c.raw = raw
			}
		}
	}
	if c.raw == nil {
		if c.in == nil {
			c.in = c.s.getBuf()
		}
		return c.nc.Read(c.in[len(c.in):cap(c.in)])
	}
	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		if c.in == nil {
			c.in = c.s.getBuf()
		}
		n, rerr = syscall.Read(int(fd), c.in[len(c.in):cap(c.in)])
		for rerr == syscall.EINTR {
			n, rerr = syscall.Read(int(fd), c.in[len(c.in):cap(c.in)])
		}
		switch {
		case rerr == syscall.EAGAIN:
			if idle {
				c.s.putBuf(c.in)
				c.in = nil
			}
			return false // the netpoller waits for the socket
		case rerr == nil && n == 0:
			rerr = io.EOF
		}
		return true
	})
	if err != nil {
		return 0, err // the deadline, or the socket closed
	}
	return max(n, 0), rerr
}

// process hands the buffered bytes to the Handler while it answers them:
// pipelined requests are answered one after the other, in order.
func (c *Conn) process() {
	h := c.s.cfg.Handler
	for !c.closed && c.resp == nil && len(c.in) > 0 {
		full := len(c.in) == cap(c.in)
		n := h.Data(c, c.in, full)
		if c.closed {
			return
		}
		if n > 0 {
			k := copy(c.in, c.in[n:])
			c.in = c.in[:k]
			if k > 0 {
				c.reqStart = time.Now()
			}
		}
		if c.parked && len(c.in) == 0 {
			// A parked request may wait for seconds (a blocking
			// playlist reload): its buffer serves other connections
			// meanwhile.
			c.s.putBuf(c.in)
			c.in = nil
		}
		parkWait(c)
		if c.closed {
			return
		}
		if c.resp != nil {
			c.flush()
			continue
		}
		if n == 0 {
			if full && len(c.in) == cap(c.in) {
				c.close() // the Handler neither answered nor made room (Grow)
			}
			return
		}
	}
}

// parkWait runs posted work until c's parked response is given (Send)
// or c closes; where ParkUntilGone asked, the socket is watched meanwhile
// for the client leaving (peer_linux.go), which closes c.
func parkWait(c *Conn) {
	for c.parked && !c.closed {
		// Asked at the park, or at a park again from posted work (a
		// request that offloaded a step, then waits for the playlist).
		if c.watchPeer && c.watchID == 0 {
			watchPeer(c)
		}
		c.watchPeer = false
		c.box.run()
	}
	c.watchPeer = false
	unwatchPeer(c)
}

// mailbox is the work other goroutines post to a connection's goroutine.
type mailbox struct {
	mu    sync.Mutex // protects posts and ended
	posts []func()
	ended bool          // the goroutine has ended: a post runs at once
	wake  chan struct{} // a post is waiting (capacity 1)
}

// post queues fn and wakes the goroutine if it waits. Once the goroutine
// has ended (a connection closed while its request was parked), fn runs
// at once on the caller's goroutine: work posted to a closed connection
// (a parked request woken as its client left) still finishes, so that
// nothing it holds is kept.
func (m *mailbox) post(fn func()) {
	m.mu.Lock()
	if m.ended {
		m.mu.Unlock()
		fn()
		return
	}
	m.posts = append(m.posts, fn)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// end runs what is still posted, when the goroutine ends; what is posted
// after runs at once (post).
func (m *mailbox) end() {
	m.mu.Lock()
	m.ended = true
	posts := m.posts
	m.posts = nil
	m.mu.Unlock()
	for _, fn := range posts {
		fn()
	}
}

// run waits for work posted and runs it.
func (m *mailbox) run() {
	<-m.wake
	m.mu.Lock()
	posts := m.posts
	m.posts = nil
	m.mu.Unlock()
	for _, fn := range posts {
		fn()
	}
}

// flush sends c's response, reports its end to Done, and closes c when
// the response says so or it failed.
func (c *Conn) flush() {
	r := c.resp
	c.resp = nil
	now := time.Now() // one read for both: clock reads were 2.7% of a 1 KiB HTTPS answer
	var deadline time.Time
	if wt := c.s.cfg.WriteTimeout; wt > 0 {
		deadline = now.Add(wt)
	}
	c.nc.SetWriteDeadline(deadline)
	r.Cursor.Began = now.UnixNano()
	err := c.out.send(r)
	closeConn := r.Close // r is the Handler's again once Done runs
	if r.Done != nil {
		r.Done(r.Cursor.Sent, err)
	}
	switch {
	case err != nil:
		c.close()
	case closeConn || c.closeAfter:
		closeAfterResponse(c)
	}
}

// closeAfterResponse closes c once its last response is written. When the
// client may still be sending (the Handler asked, or bytes are buffered)
// the write side is shut first and what arrives is read and dropped until
// the client closes or lingerTimeout passes, so the kernel's reset to
// unread bytes cannot destroy the answer (RFC 9112 §9.6). A draining
// server closes at once.
func closeAfterResponse(c *Conn) {
	if c.closed {
		return
	}
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if c.s.draining.Load() || !(c.lingerWanted || len(c.in) > 0) || !ok || cw.CloseWrite() != nil {
		c.close()
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(lingerTimeout))
	buf := c.in[:cap(c.in)]
	if len(buf) == 0 {
		buf = make([]byte, 4<<10)
	}
	for {
		if _, err := c.nc.Read(buf); err != nil {
			break
		}
	}
	c.close()
}

func (c *Conn) close() {
	if c.closed {
		return
	}
	c.closed = true
	unwatchPeer(c) // while the descriptor is still the socket's
	c.nc.Close()
	c.s.putBuf(c.in)
	c.in, c.out.wbuf = nil, nil
}

// Underlying is the connection c reads and writes (over TLS, the TLS
// connection), for a Handler that takes it over at Accept and refuses
// it: c then closes it, which must then do nothing.
func (c *Conn) Underlying() net.Conn { return c.nc }

// State returns the Handler's per-connection state.
func (c *Conn) State() any { return c.state }

// SetState sets the Handler's per-connection state.
func (c *Conn) SetState(v any) { c.state = v }

// SetRemote replaces the peer address (the client a PROXY header named).
func (c *Conn) SetRemote(a *net.TCPAddr) { c.remote = a }

// Grow makes room for a request of n bytes in c's buffer.
func (c *Conn) Grow(n int) {
	if cap(c.in) >= n {
		return
	}
	b := make([]byte, len(c.in), n)
	copy(b, c.in)
	c.in = b
}

// WriteNow writes p at once (a 100 Continue).
func (c *Conn) WriteNow(p []byte) error {
	var deadline time.Time
	if wt := c.s.cfg.WriteTimeout; wt > 0 {
		deadline = time.Now().Add(wt)
	}
	c.nc.SetWriteDeadline(deadline)
	_, err := c.nc.Write(p)
	return err
}

// Send gives c its response; it leaves when the Handler's call returns.
func (c *Conn) Send(r *wire.Response) {
	if c.closed {
		if r.Done != nil {
			r.Done(0, net.ErrClosed)
		}
		return
	}
	c.parked = false
	c.resp = r
}

// Park says the Handler will Send c's response later, from Post.
func (c *Conn) Park() { c.parked = true }

// Post runs fn on c's goroutine while it waits (parked, or for a Ready
// hook), also when c has closed by then: fn checks Closed; once c's
// goroutine has ended, at once on the caller's. Safe from any goroutine.
func (c *Conn) Post(fn func()) {
	c.box.post(fn)
}

// Continue resumes c's response after its Ready hook said not yet (from a
// Post); after a parked Send the goroutine goes on by itself.
func (c *Conn) Continue() { c.resumed = true }

// Resume is Post(Continue). Safe from any goroutine.
func (c *Conn) Resume() { c.Post(c.Continue) }

// Abort closes c at once, with a reset (SO_LINGER 0) when reset is set.
func (c *Conn) Abort(reset bool) {
	if reset {
		c.Reset()
	}
	c.close()
}

// Reset makes c's close a reset (SO_LINGER 0).
func (c *Conn) Reset() {
	if tc := conn.Socket(c.nc); tc != nil {
		tc.SetLinger(0)
	}
}

// LingerOnClose says the client may still be sending when c closes.
func (c *Conn) LingerOnClose() { c.lingerWanted = true }

// Closed reports whether c is closed.
func (c *Conn) Closed() bool { return c.closed }

// Draining reports whether c's server is shutting down.
func (c *Conn) Draining() bool { return c.s.draining.Load() }

// RemoteAddr is the peer, or the client its PROXY header named.
func (c *Conn) RemoteAddr() net.Addr {
	if c.remote != nil {
		return c.remote
	}
	return c.nc.RemoteAddr()
}

// NetConn is c as a net.Conn for fasthttp's RequestCtx: over TLS it also
// answers ConnectionState, so the request knows it came over HTTPS.
func (c *Conn) NetConn() net.Conn {
	if _, ok := c.nc.(tlsStater); ok {
		return tlsView{netView{c}}
	}
	return netView{c}
}

// netView is a Conn as a net.Conn, for what asks a connection its
// addresses (fasthttp's RequestCtx). Reading and writing go through the
// transport, never these.
type netView struct{ c *Conn }

func (v netView) Read([]byte) (int, error)         { return 0, errNotStream }
func (v netView) Write([]byte) (int, error)        { return 0, errNotStream }
func (v netView) Close() error                     { v.c.closeAfter = true; return nil }
func (v netView) LocalAddr() net.Addr              { return v.c.nc.LocalAddr() }
func (v netView) RemoteAddr() net.Addr             { return v.c.RemoteAddr() }
func (v netView) SetDeadline(time.Time) error      { return nil }
func (v netView) SetReadDeadline(time.Time) error  { return nil }
func (v netView) SetWriteDeadline(time.Time) error { return nil }

type tlsStater interface{ ConnectionState() tls.ConnectionState }

// tlsView is a TLS Conn as fasthttp recognises one (its connTLSer).
type tlsView struct{ netView }

func (v tlsView) Handshake() error { return nil }

func (v tlsView) ConnectionState() tls.ConnectionState {
	return v.c.nc.(tlsStater).ConnectionState()
}

// waitResume waits, running posted work, until a Post calls Continue or
// c closes. false: closed.
func waitResume(c *Conn) bool {
	c.resumed = false
	for !c.resumed && !c.closed {
		c.box.run()
	}
	return !c.closed
}
