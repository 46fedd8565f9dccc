//go:build linux

package loop

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"segorigin/origin/wire"
)

// loop is one event loop: an epoll instance, its thread's goroutine, and
// the connections accepted on it.
type loop struct {
	e     *Engine
	p     poller // readiness of the listener, the eventfd and the connections
	evfd  int    // eventfd: post wakes the loop through it
	lfd   int    // the listening socket (shared by every loop); -1 once dropped
	conns []*Conn
	nconn int
	now   int64 // nanoseconds, read once per wake-up
	// handedOff: a connection now waits on another goroutine (Park, a
	// Ready hook's "not yet"); the loop yields before it waits, so that
	// goroutine runs at once even when the loops hold every P.
	handedOff bool

	reading, idle, writing list // connections by what they wait for
	lingering              list // closed by the server, dropping what still arrives
	paced                  list // responses waiting for their next quantum (Response.Rate)

	free    [][]byte               // read buffers not in use (cap ReadBuffer)
	copyBuf []byte                 // sendfile fallback: one pread+send at a time on this thread
	iov     [maxSendIov]unix.Iovec // a send's vector, built on this thread (flush)
	sendNow bool                   // flush sends itself, not through the poller's ring
	bufs    [][]byte               // the memory parts handed to a Sealer (sealMem)
	// again: connections whose Sealer holds bytes their socket will not
	// announce again, read before the next wait (readAgain).
	again, spareAgain []*Conn
	dropBuf           []byte // what lingering connections still receive is read into it and dropped

	acceptPaused time.Time // accept paused until then (out of descriptors); zero: accepting
	acceptWait   time.Duration
	draining     bool

	mu      sync.Mutex // protects queue, spare and stopped
	stopped bool       // run has returned: post runs fn itself
	queue   []posted
	spare   []posted
	signals atomic.Bool // an eventfd write is pending

	done chan struct{} // closed when run returns
}

// posted is work queued for the loop's thread.
type posted struct{ fn func() }

func newLoop(e *Engine, lfd int) (*loop, error) {
	p, err := e.newPoller(e.stats)
	if err != nil {
		return nil, err
	}
	evfd, err := newEventfd(p)
	if err != nil {
		return nil, err
	}
	l := &loop{e: e, p: p, evfd: evfd, lfd: lfd, done: make(chan struct{})}
	l.reading.timeout, l.idle.timeout, l.writing.timeout = e.cfg.ReadTimeout, e.cfg.IdleTimeout, e.cfg.WriteTimeout
	l.lingering.timeout = lingerTimeout
	l.paced.timeout = wire.PaceQuantum
	if err := p.add(evfd, unix.EPOLLIN); err != nil {
		l.closeFDs()
		return nil, fmt.Errorf("loop: eventfd: %w", err)
	}
	if lfd < 0 { // adopted connections only
		return l, nil
	}
	if err := l.watchListener(); err != nil {
		l.closeFDs()
		return nil, err
	}
	return l, nil
}

func (l *loop) watchListener() error {
	if err := l.p.add(l.lfd, unix.EPOLLIN|unix.EPOLLEXCLUSIVE); err != nil {
		return fmt.Errorf("loop: listener: %w", err)
	}
	return nil
}

// newEventfd makes a non-blocking eventfd; on failure it closes owner.
func newEventfd(owner interface{ close() error }) (int, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		owner.close()
		return -1, fmt.Errorf("loop: eventfd: %w", err)
	}
	return fd, nil
}

// stop ends the loop: queued work runs (it finds its connections closed),
// later posts run where they are made, and the descriptors close.
func (l *loop) stop() {
	l.closeAll()
	for {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		if len(q) == 0 {
			l.stopped = true
			l.mu.Unlock()
			break
		}
		l.mu.Unlock()
		for i := range q {
			q[i].fn()
		}
	}
	l.closeFDs()
}

func (l *loop) closeFDs() {
	unix.Close(l.evfd)
	l.p.close()
}

// run is the loop's goroutine; it returns when draining is over (no
// connection left).
//
// While there is work it waits in epoll_wait, at most activeWait at a
// time, as a raw system call (poller.wait): to the runtime the loop is
// running, so its sysmon neither takes the thread's P away during the
// wait nor parks and wakes threads for it; it yields every yieldEvery
// instead, or sooner when goroutines wait for a P (waitersEvery), and a signal (the collector stopping the world) ends a wait
// at once. With nothing to do (at once, or after parkAfter: wait.go) it
// parks on Go's netpoller until an event or its next deadline: a parked
// goroutine holds neither thread nor P, so an idle server costs no CPU
// and sysmon sleeps (wait.go says why the calls of a wake-up are raw).
// The goroutine is not locked to its thread: locked, every wake-up from
// the netpoller would be a hand-over between two threads. (The io_uring
// poller locks it all the same: its ring runs completions only on the
// thread that submits.)
func (l *loop) run() {
	defer close(l.done)
	defer l.p.end()
	defer l.stop()
	if err := l.p.start(); err != nil {
		l.e.log.Error("starting the poller failed: loop stops", "err", err)
		l.closeAll()
		return
	}
	events := make([]unix.EpollEvent, 256)
	l.now = time.Now().UnixNano()
	wc := newWaitClock(l.now)
	for !(l.draining && l.nconn == 0) {
		n, err := l.nextEvents(events, &wc)
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.e.log.Error("waiting for events failed: loop stops", "err", err)
			l.closeAll()
			return
		}
		l.e.stats.Wakeups.Add(1)
		for i := 0; i < n; i++ {
			ev := &events[i]
			fd := int(ev.Fd)
			switch {
			case fd == l.evfd:
				l.runPosted()
			case fd == l.lfd && l.lfd >= 0:
				l.accept()
			default:
				if fd >= len(l.conns) || l.conns[fd] == nil {
					break
				}
				if ev.Events&evSent != 0 {
					sent(l.conns[fd], ev.Pad)
				} else {
					l.event(l.conns[fd], ev.Events)
				}
			}
		}
		l.expire()
		if len(l.again) > 0 {
			readAgain(l)
		}
	}
}

// nextDeadline is when the loop's earliest wait ends (Unix ns, rounded up
// to a millisecond, so that a parked loop's deadline changes at most once
// a millisecond), or -1 when none is pending.
func (l *loop) nextDeadline() int64 {
	next := int64(-1)
	for _, ls := range [...]*list{&l.reading, &l.idle, &l.writing, &l.lingering, &l.paced} {
		if d, ok := ls.nextDeadline(); ok && (next < 0 || d < next) {
			next = d
		}
	}
	if !l.acceptPaused.IsZero() {
		if d := l.acceptPaused.UnixNano(); next < 0 || d < next {
			next = d
		}
	}
	if next < 0 {
		return -1
	}
	const ms = int64(time.Millisecond)
	return (next + ms - 1) / ms * ms
}

// waitMillis is epoll_wait's timeout: until the earliest deadline (at
// most a second late: timeouts are coarse), or forever.
func (l *loop) waitMillis() int {
	if len(l.again) > 0 {
		return 0
	}
	next := l.nextDeadline()
	if next < 0 {
		return -1
	}
	ms := (next-l.now)/int64(time.Millisecond) + 1
	return int(min(max(ms, 0), 1000))
}

// expire closes the connections whose wait is over, and resumes accepting
// after a pause.
func (l *loop) expire() {
	for c := l.lingering.head; c != nil && l.lingering.expired(c, l.now); c = l.lingering.head {
		l.close(c) // the client kept sending: enough
	}
	for c := l.paced.head; c != nil && l.paced.expired(c, l.now); c = l.paced.head {
		// The next quantum of a paced response: it goes on, under the
		// write timeout again.
		l.writing.push(c, l.now)
		c.flush()
		if !c.closed && c.resp == nil {
			l.process(c)
		}
	}
	for _, ls := range [...]*list{&l.reading, &l.idle, &l.writing} {
		for c := ls.head; c != nil && ls.expired(c, l.now); c = ls.head {
			l.e.stats.Timeouts.Add(1)
			ls.remove(c)
			switch ls {
			case &l.writing:
				l.fail(c, errWriteTimeout)
			default:
				l.e.cfg.Handler.Timeout(c, ls == &l.reading && len(c.in) > 0)
				if c.resp != nil {
					c.resp.Close = true
					l.sendNow = true // a last answer (408), best effort, sent before the close
					c.flush()
					l.sendNow = false
					if c.resp != nil {
						l.fail(c, errWriteTimeout)
						continue
					}
				}
				l.close(c)
			}
		}
	}
	if !l.acceptPaused.IsZero() && l.now >= l.acceptPaused.UnixNano() && !l.draining {
		l.acceptPaused = time.Time{}
		if err := l.watchListener(); err != nil {
			l.e.log.Error("accept stays paused", "err", err)
		}
	}
}

var errWriteTimeout = errors.New("loop: write timeout")

// maxFreeBuffers bounds the read buffers a loop keeps for reuse: enough
// for its busy connections, not a burst's worth held for ever.
const maxFreeBuffers = 128

// accept takes the pending connections (a bounded batch per wake-up:
// other loops and connections get their turn).
func (l *loop) accept() {
	for range 64 {
		fd, remote, err := rawAccept4(l.lfd)
		if err != nil {
			switch {
			case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			case errors.Is(err, unix.ECONNABORTED):
				continue
			case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.ENOMEM):
				l.pauseAccept(err)
			default:
				l.e.log.Error("accept failed", "err", err)
			}
			return
		}
		l.acceptWait = 0
		l.register(fd, remote, nil)
	}
}

// register serves fd, a connected socket, on this loop: accepted from
// the listener, or adopted (Engine.Adopt). The Handler may refuse it.
func (l *loop) register(fd int, remote *net.TCPAddr, io ConnIO) {
	// As Go's net package does for every TCP connection: small responses
	// leave at once (MSG_MORE still joins a header to its body).
	// (An error here would be the socket's own, and its first read says so.)
	_ = rawNoDelay(fd)
	c := &Conn{fd: fd, l: l, remote: remote, io: io}
	if local, err := rawGetsockname(fd); err == nil {
		c.local = local
	}
	l.e.stats.Accepted.Add(1)
	if !l.e.cfg.Handler.Accept(c) {
		rawClose(fd)
		l.e.stats.Closed.Add(1)
		return
	}
	watch := l.p.addConn
	if io != nil {
		watch = func(fd int) error { return l.p.add(fd, unix.EPOLLIN) } // its ConnIO reads the socket
	}
	if err := watch(fd); err != nil {
		l.e.log.Error("watching a new connection failed: closing it", "err", err)
		c.closed = true
		unix.Close(fd)
		l.e.stats.Closed.Add(1)
		l.e.cfg.Handler.Closed(c)
		return
	}
	c.events = unix.EPOLLIN
	for fd >= len(l.conns) {
		l.conns = append(l.conns, make([]*Conn, max(len(l.conns), 64))...)
	}
	l.conns[fd] = c
	l.nconn++
	if l.draining {
		l.close(c)
		return
	}
	l.reading.push(c, l.now)
	queueRead(l, c) // a Sealer may hold what the handshake read with the client's Finished
}

// pauseAccept stops watching the listener for a while (out of
// descriptors: the listener stays readable, so a level-triggered watch
// would spin), backing off up to a second, as net/http does.
func (l *loop) pauseAccept(err error) {
	l.acceptWait = min(max(2*l.acceptWait, 5*time.Millisecond), time.Second)
	l.acceptPaused = time.Unix(0, l.now).Add(l.acceptWait)
	if e := l.p.del(l.lfd); e != nil {
		l.e.log.Error("accept pause: the listener stays watched", "err", e)
	}
	if h, ok := l.e.cfg.Handler.(interface{ AcceptError(error) }); ok {
		h.AcceptError(err)
	}
}

// event handles one connection's readiness.
func (l *loop) event(c *Conn, ev uint32) {
	switch {
	case c.lingering && ev&(unix.EPOLLERR|unix.EPOLLHUP) != 0:
		l.close(c)
	case c.lingering:
		l.drop(c)
	case ev&(unix.EPOLLERR|unix.EPOLLHUP) != 0:
		// Reset or gone both ways: nothing can be sent or read.
		l.fail(c, errPeerGone)
	case c.parked && ev&unix.EPOLLRDHUP != 0:
		// The client left while its request was parked (ParkUntilGone).
		l.close(c)
	case c.parked && ev&unix.EPOLLIN != 0:
		// Parked with EPOLLIN kept (park): the client left or sent
		// more. Watch for what the park asked from now (ParkUntilGone:
		// a FIN, which shows as EPOLLRDHUP at the next wait); what it
		// sent waits for the parked response.
		c.setEvents(c.parkEv)
	case ev&unix.EPOLLOUT != 0 && c.wordWait:
		l.closeAfterResponse(c) // room for its ConnIO's last words now
	case ev&unix.EPOLLOUT != 0 && c.resp != nil:
		c.flush()
		if !c.closed && c.resp == nil {
			l.process(c)
		}
	case ev&unix.EPOLLIN != 0:
		l.read(c)
	}
}

var errPeerGone = errors.New("loop: connection reset or closed by the peer")

// read reads once into c's buffer and processes what it holds.
func (l *loop) read(c *Conn) {
	if c.resp != nil || c.parked || c.lingering {
		return
	}
	if c.in == nil {
		c.in = l.getBuf()
	}
	if len(c.in) == cap(c.in) {
		l.process(c)
		return
	}
	n, err := readIn(c, c.in[len(c.in):cap(c.in)])
	switch {
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		if len(c.in) == 0 {
			l.putBuf(c.in) // nothing after all (a Sealer's read again): an idle connection holds no buffer
			c.in = nil
		}
		return
	case err != nil || n == 0:
		// The peer closed (or reset): nothing more will complete a
		// request, and nothing is in flight to finish.
		l.close(c)
		return
	}
	if len(c.in) == 0 {
		// The first byte of a request: its read time starts now.
		l.reading.push(c, l.now)
	}
	c.in = c.in[:len(c.in)+n]
	l.process(c)
}

// process hands c's buffered bytes to the Handler while it can answer
// them: pipelined requests are answered one after the other, in order.
func (l *loop) process(c *Conn) {
	for !c.closed && c.resp == nil && !c.parked && len(c.in) > 0 {
		full := len(c.in) == cap(c.in)
		n := l.e.cfg.Handler.Data(c, c.in, full)
		if c.closed {
			return
		}
		if n > 0 {
			rest := copy(c.in, c.in[n:])
			c.in = c.in[:rest]
		}
		if c.resp != nil {
			c.flush()
			continue
		}
		if c.parked {
			break
		}
		if n == 0 {
			if full && len(c.in) == cap(c.in) {
				l.close(c) // the Handler neither answered nor made room (Grow)
			}
			break
		}
	}
	l.settle(c)
}

// settle puts c in the list of what it now waits for, and gives its read
// buffer back when nothing is buffered.
func (l *loop) settle(c *Conn) {
	if c.parked && !c.closed && len(c.in) == 0 {
		// A parked request may wait for seconds (a blocking playlist
		// reload): its buffer serves other connections meanwhile.
		l.putBuf(c.in)
		c.in = nil
	}
	if c.closed || c.resp != nil || c.parked || c.lingering {
		return
	}
	if len(c.in) == 0 {
		l.putBuf(c.in)
		c.in = nil
		if c.closeAfter {
			l.closeAfterResponse(c)
			return
		}
		if l.draining {
			l.closeAfterResponse(c)
			return
		}
		l.idle.push(c, l.now)
		queueRead(l, c)
		return
	}
	if c.list != &l.reading {
		l.reading.push(c, l.now)
	}
	queueRead(l, c)
}

func (l *loop) getBuf() []byte {
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		return b[:0]
	}
	return make([]byte, 0, l.e.cfg.ReadBuffer)
}

// putBuf keeps a buffer of the pool's size for the next request; a grown
// one (a large request body) is left to the collector.
func (l *loop) putBuf(b []byte) {
	if cap(b) == l.e.cfg.ReadBuffer && len(l.free) < maxFreeBuffers {
		l.free = append(l.free, b[:0])
	}
}

// fail ends c's response with err and closes it.
func (l *loop) fail(c *Conn, err error) {
	if r := c.resp; r != nil {
		c.resp = nil
		if r.Done != nil {
			r.Done(r.Cursor.Sent, err)
		}
	}
	l.close(c)
}

// close closes c and forgets it.
func (l *loop) close(c *Conn) {
	if c.closed {
		return
	}
	c.closed = true
	if c.list != nil {
		c.list.remove(c)
	}
	if r := c.resp; r != nil {
		c.resp = nil
		if r.Done != nil {
			r.Done(r.Cursor.Sent, net.ErrClosed)
		}
	}
	if c.in != nil {
		l.putBuf(c.in)
		c.in = nil
	}
	if c.fd < len(l.conns) && l.conns[c.fd] == c {
		l.conns[c.fd] = nil
		l.nconn--
	}
	closeIO(c)
	l.p.forget(c.fd)
	rawClose(c.fd)
	l.e.stats.Closed.Add(1)
	l.e.cfg.Handler.Closed(c)
}

// beginDrain stops accepting and closes the connections that wait for
// nothing; the others close after their response (settle).
func (l *loop) beginDrain() {
	if l.draining {
		return
	}
	l.draining = true
	if l.acceptPaused.IsZero() && l.lfd >= 0 {
		l.p.del(l.lfd) // fails only if it was not watched
	}
	// No event of this wake-up may reach accept now: Shutdown closes
	// the listener (its number may then name another file).
	l.lfd = -1
	l.acceptPaused = time.Time{}
	for _, c := range l.conns {
		if c != nil && c.resp == nil && !c.parked && len(c.in) == 0 {
			l.closeAfterResponse(c) // closes at once, after a ConnIO's last words
		}
	}
}

// closeAll closes every connection, responses in flight included.
func (l *loop) closeAll() {
	l.beginDrain()
	for _, c := range l.conns {
		if c != nil {
			l.fail(c, net.ErrClosed)
		}
	}
}

// post queues fn to run on l's thread and wakes the loop.
func (l *loop) post(fn func()) {
	l.mu.Lock()
	if l.stopped {
		// The loop and its descriptors are gone (every connection
		// closed): fn finds c closed and only releases what it holds.
		l.mu.Unlock()
		fn()
		return
	}
	l.queue = append(l.queue, posted{fn})
	l.mu.Unlock()
	if l.signals.CompareAndSwap(false, true) {
		var one = [8]byte{1}
		for {
			_, err := unix.Write(l.evfd, one[:])
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
}

func (l *loop) runPosted() {
	var buf [8]byte
	rawRead(l.evfd, buf[:])
	l.signals.Store(false)
	l.mu.Lock()
	q := l.queue
	l.queue, l.spare = l.spare[:0], nil
	l.mu.Unlock()
	for i := range q {
		q[i].fn()
		q[i] = posted{}
	}
	l.mu.Lock()
	l.spare = q[:0]
	l.mu.Unlock()
}

// sendmsg is sendmsg(2) over iov, without allocating (unix.SendmsgBuffers
// builds its iovec slice per call), as a raw system call (wait.go).
func sendmsg(fd int, iov []unix.Iovec, flags int) (int, error) {
	var msg unix.Msghdr
	msg.Iov = &iov[0]
	msg.SetIovlen(len(iov))
	for {
		n, _, e := unix.RawSyscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
		if e == 0 {
			return int(n), nil
		}
		if e != syscall.EINTR {
			return 0, e
		}
	}
}
