//go:build linux

package loop

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uring is the io_uring poller: readiness by one-shot IORING_OP_POLL_ADD
// requests on a ring of the loop's own (ring.go), so that a loop
// iteration is one io_uring_enter for everything it changed and
// everything it waits for, where epoll costs an epoll_ctl per change
// beside the epoll_wait.
//
// Each watched descriptor has at most one poll request in flight. A
// completion reports the descriptor's readiness once; the request is
// armed again at the next wait, after the loop has acted on it, and a
// one-shot poll completes at once when its descriptor is still ready:
// the level-triggered reports the loop is written for. A change of what
// a descriptor is watched for costs nothing while its request is not in
// flight (the usual case: the loop changes it while handling its
// completion); otherwise the request is removed and another one armed.
// Requests are told apart by a generation in their user data, so a
// completion of one removed (or of a descriptor closed and its number
// reused) is dropped.
//
// A connection's socket (addConn) watched for EPOLLIN alone is not
// polled but received from: a one-shot IORING_OP_RECV picks one of the
// ring's provided buffers (recvbufs.go) when bytes arrive, and its
// completion is reported as EPOLLIN with the bytes held for the loop's
// read, which copies them and costs no system call. One-shot, not
// multishot: the loop reads nothing while a response is in flight (a
// client's pipelined requests wait in its socket), so a multishot
// receive would be cancelled and armed again for every response. A
// receive is never removed but when its connection closes, so no bytes
// are lost to a change of what is watched; held bytes are reported
// again, level-triggered, while EPOLLIN is watched, and its completions
// are told from those of a closed descriptor's by the connection's epoch.
//
// The ring is SINGLE_ISSUER and DEFER_TASKRUN: completions run only in
// the loop thread's own io_uring_enter, never by interrupting it, so the
// loop's goroutine is locked to its thread from start to end. A parked
// loop waits in io_uring_enter (park).
type uring struct {
	r     *ring
	bufs  *recvBufs
	stats *Stats
	fds   []watch
	dirty []int32 // descriptors whose request is to be armed at the next wait
	// receives is how many receives are in flight: the buffers stay
	// mapped while one is.
	receives int
	// The message headers of the sends queued since the last enter: the
	// kernel copies them when it takes the SQEs.
	slots  []sendSlot
	nslots int
	// lazy counts the queued sends the loop need not hear of before
	// its next event (send).
	lazy  int
	began bool
}

// sendSlot is one queued send's message header and vector.
type sendSlot struct {
	hdr unix.Msghdr
	iov [maxSendIov]unix.Iovec
}

// watch is what one descriptor is watched for.
type watch struct {
	ev      uint32 // EPOLLIN, EPOLLOUT, EPOLLRDHUP (a poll mask's POLLRDHUP), EPOLLEXCLUSIVE, or 0 (errors and hang-ups only)
	armedEv uint32 // ev of the poll request in flight
	gen     uint16 // the generation of its current poll request
	epoch   uint16 // of the connection on this descriptor: its receive's completion is kept for it alone
	// What the last receive brought that the loop has not read: bytes
	// in buffer held-1 from off to n, or end (1: the peer closed, < 0:
	// the receive's -errno).
	held, off, n uint16
	end          int16
	watched      bool
	armed        bool   // a poll request is in flight
	recv         bool   // EPOLLIN alone is watched by a receive (addConn)
	receiving    bool   // a receive is in flight
	sending      bool   // a send is queued or its completion not reaped
	dirty        bool   // listed in dirty
	sendAt       uint32 // the queued send's SQE
}

// The kinds of user data besides a poll request's: a removal's or
// cancellation's own completion, and a receive's.
const (
	removeTag = 1 << 63
	recvTag   = 1 << 62
	sendTag   = 1 << 61
)

// evSent is the event of a send's completion (uring.send), its result
// (bytes sent or -errno) in the event's Pad: a bit no epoll event has.
const evSent = 1 << 27

// sendSlots bounds the sends queued in one loop iteration; more are
// made by the loop itself.
const sendSlots = 256

func newUring(stats *Stats) (poller, error) {
	r, err := newRing(stats)
	if err != nil {
		return nil, err
	}
	u := &uring{r: r, stats: stats, slots: make([]sendSlot, sendSlots)}
	if u.bufs, err = newRecvBufs(r); err != nil {
		u.close()
		return nil, err
	}
	return u, nil
}

// start locks the loop's goroutine to its thread and makes that thread
// the ring's submitter.
func (u *uring) start() error {
	runtime.LockOSThread()
	u.began = true
	return u.r.enable()
}

func (u *uring) end() {
	if u.began {
		u.began = false
		runtime.UnlockOSThread()
	}
}

func (u *uring) add(fd int, ev uint32) error {
	for fd >= len(u.fds) {
		u.fds = append(u.fds, make([]watch, max(len(u.fds), 64))...)
	}
	w := &u.fds[fd]
	if w.armed {
		if err := u.remove(fd); err != nil {
			return err
		}
	}
	w.ev, w.watched, w.recv = ev, true, false
	u.mark(fd)
	return nil
}

// addConn watches a connection's socket for EPOLLIN: by receiving from
// it into the ring's buffers.
func (u *uring) addConn(fd int) error {
	if err := u.add(fd, unix.EPOLLIN); err != nil {
		return err
	}
	u.fds[fd].recv = true
	return nil
}

func (u *uring) mod(fd int, ev uint32) error {
	if fd >= len(u.fds) || !u.fds[fd].watched {
		return fmt.Errorf("loop: io_uring poll %d: %w", fd, unix.ENOENT)
	}
	w := &u.fds[fd]
	w.ev = ev
	if w.armed && w.armedEv != ev {
		if err := u.remove(fd); err != nil {
			return err
		}
	}
	u.mark(fd)
	return nil
}

// del stops watching fd at once: its request is removed now, not at the
// next wait (the listener's, before it is closed).
func (u *uring) del(fd int) error {
	if fd >= len(u.fds) || !u.fds[fd].watched {
		return nil
	}
	u.forget(fd)
	if err := u.r.enter(0, 0, -1, false); err != nil {
		return fmt.Errorf("loop: io_uring poll remove %d: %w", fd, err)
	}
	return nil
}

// forget removes fd's requests with the next wait's submissions: a
// request holds its file, so a descriptor closed with one in flight
// would stay open until then. Bytes received and not read are dropped
// with the connection.
func (u *uring) forget(fd int) {
	if fd >= len(u.fds) {
		return
	}
	w := &u.fds[fd]
	if w.armed {
		u.remove(fd) // fails only when the full queue cannot be submitted: the ring is broken, and the next wait says so
	}
	if w.receiving {
		u.cancel(recvUserData(fd, w.epoch))
		w.receiving = false
	}
	if w.sending && !u.r.submitted(w.sendAt) {
		// The response's memory goes back to its Handler now, and the
		// descriptor's number to the next open: the send must not run.
		u.r.nop(w.sendAt)
	}
	w.sending = false
	if w.held != 0 {
		u.bufs.give(w.held - 1)
	}
	w.held, w.off, w.n, w.end = 0, 0, 0, 0
	w.epoch++
	w.watched, w.recv = false, false
}

// remove queues the removal of fd's poll request in flight; its
// completion, and the request's own (-ECANCELED), are dropped.
func (u *uring) remove(fd int) error {
	w := &u.fds[fd]
	s, err := u.r.next()
	if err != nil {
		return err
	}
	s.opcode, s.fd, s.addr, s.userData = opPollRemove, -1, pollUserData(fd, w.gen), removeTag
	w.gen++
	w.armed = false
	return nil
}

// cancel queues the cancellation of the request with user data ud.
func (u *uring) cancel(ud uint64) error {
	s, err := u.r.next()
	if err != nil {
		return err
	}
	s.opcode, s.fd, s.addr, s.userData = opAsyncCancel, -1, ud, removeTag
	return nil
}

func (u *uring) mark(fd int) {
	if w := &u.fds[fd]; !w.dirty {
		w.dirty = true
		u.dirty = append(u.dirty, int32(fd))
	}
}

func pollUserData(fd int, gen uint16) uint64 { return uint64(gen)<<32 | uint64(uint32(fd)) }
func recvUserData(fd int, epoch uint16) uint64 {
	return recvTag | uint64(epoch)<<32 | uint64(uint32(fd))
}
func sendUserData(fd int, epoch uint16) uint64 {
	return sendTag | uint64(epoch)<<32 | uint64(uint32(fd))
}

// send queues a sendmsg of iov on a connection's socket (addConn), made
// when the next wait enters the ring, with MSG_DONTWAIT: it sends what
// the socket takes then, as sendmsg(2) would, and its completion is
// reported as evSent with the bytes sent or -errno. lazy: nothing waits
// on the completion but the response's end (its last bytes, no
// pipelined request, no close), so the wait need not return for it
// alone (wait). false: not queued
// (the iteration's slots are used up, or fd is not a plain connection):
// the loop sends itself. iov's memory must stay as it is until the
// completion is reported or fd is forgotten.
func (u *uring) send(fd int, iov []unix.Iovec, flags int, lazy bool) bool {
	if fd >= len(u.fds) || !u.fds[fd].recv || u.nslots == len(u.slots) || len(iov) > maxSendIov {
		return false
	}
	w := &u.fds[fd]
	s, err := u.r.next()
	if err != nil {
		return false
	}
	sl := &u.slots[u.nslots]
	u.nslots++
	copy(sl.iov[:], iov)
	sl.hdr = unix.Msghdr{Iov: &sl.iov[0]}
	sl.hdr.SetIovlen(len(iov))
	s.opcode, s.fd, s.addr = opSendmsg, int32(fd), uint64(uintptr(unsafe.Pointer(&sl.hdr)))
	s.opFlags = uint32(flags | unix.MSG_DONTWAIT)
	s.userData = sendUserData(fd, w.epoch)
	w.sending, w.sendAt = true, u.r.at()
	if lazy {
		u.lazy++
	}
	return true
}

// arm queues a request for each watched descriptor that has none: a
// receive for a connection watched for EPOLLIN alone, a poll otherwise.
// A descriptor whose received bytes (or end) wait to be read, and that
// is watched for EPOLLIN, is reported into events at once instead, as
// many as fit.
func (u *uring) arm(events []unix.EpollEvent) (int, error) {
	n, kept := 0, 0
	for i, fd := range u.dirty {
		w := &u.fds[fd]
		if !w.dirty {
			continue
		}
		if w.watched {
			var err error
			switch {
			case w.ev&unix.EPOLLIN != 0 && w.pending():
				if n == len(events) {
					u.dirty = append(u.dirty[:kept], u.dirty[i:]...)
					return n, nil
				}
				events[n] = unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd}
				n++
				// Level-triggered, as epoll reports a socket with
				// bytes in it: again at every wait until they are
				// read (the loop may not read them now: a full
				// buffer the Handler grows, a response in flight).
				u.dirty[kept] = fd
				kept++
				continue
			case w.recv && w.ev == unix.EPOLLIN:
				if !w.receiving {
					err = u.receive(int(fd))
				}
			case !w.armed:
				err = u.poll(int(fd))
			}
			if err != nil {
				u.dirty = append(u.dirty[:kept], u.dirty[i:]...)
				return n, err
			}
		}
		w.dirty = false
	}
	u.dirty = u.dirty[:kept]
	return n, nil
}

func (u *uring) poll(fd int) error {
	w := &u.fds[fd]
	s, err := u.r.next()
	if err != nil {
		return err
	}
	s.opcode, s.fd, s.userData = opPollAdd, int32(fd), pollUserData(fd, w.gen)
	s.opFlags = w.ev | unix.EPOLLERR | unix.EPOLLHUP
	w.armed, w.armedEv = true, w.ev
	return nil
}

// receive queues a one-shot receive on fd into one of the ring's
// buffers, picked when bytes arrive (IORING_RECVSEND_POLL_FIRST: a
// connection armed after its answer rarely has its next request yet).
func (u *uring) receive(fd int) error {
	w := &u.fds[fd]
	s, err := u.r.next()
	if err != nil {
		return err
	}
	s.opcode, s.fd, s.ioprio, s.flags, s.bufGroup = opRecv, int32(fd), recvPollFirst, sqeBufferSelect, recvBufGroup
	s.len = recvBufSize
	s.userData = recvUserData(fd, w.epoch)
	w.receiving = true
	u.receives++
	return nil
}

func (w *watch) pending() bool { return w.held != 0 || w.end != 0 }

// wait arms what needs arming, submits it, and reports the completions
// (and what waits to be read): one io_uring_enter, none when completions
// are already waiting. With lazy sends queued it waits for one
// completion more than they make, at most lazyWait: their completions
// come back at once, and the loop hears of them with the next request
// instead of entering again for them alone.
func (u *uring) wait(events []unix.EpollEvent, ms int) (int, error) {
	n, err := u.arm(events)
	if err != nil {
		return n, err
	}
	n += u.collect(events[n:])
	if n > 0 && u.r.pending() == 0 {
		u.nslots, u.lazy = 0, 0
		return n, nil
	}
	min, wait := uint32(1), int64(-1)
	if ms >= 0 {
		wait = int64(ms) * int64(time.Millisecond)
	}
	switch {
	case n > 0 || ms == 0:
		min = 0
	case u.lazy > 0:
		min += uint32(u.lazy)
		if wait < 0 || wait > int64(lazyWait) {
			wait = int64(lazyWait)
		}
	}
	err = u.r.enter(min, enterGetEvents, wait, ms >= 0 && ms <= activeWait || u.lazy > 0)
	if u.r.pending() == 0 {
		u.nslots, u.lazy = 0, 0 // every queued send's header has been copied
	}
	if err != nil {
		return n, err
	}
	return n + u.collect(events[n:]), nil
}

// park is the io_uring loop's: a wait in io_uring_enter until an event
// or next (Unix ns, -1 none), as an ordinary system call, so that the
// runtime takes the thread's P for other goroutines meanwhile. The ring
// wakes its submitter itself when a completion's work is queued.
// (Parked on Go's netpoller through an eventfd registered with the ring
// instead, a loop learnt of a request 13-20 ms late: with DEFER_TASKRUN
// the kernel signals the eventfd only when its work list was empty, and
// may defer the signal through RCU.)
func (u *uring) park(events []unix.EpollEvent, next, now int64) (int, error) {
	ms := -1
	if next >= 0 {
		ms = int(max((next-now+int64(time.Millisecond)-1)/int64(time.Millisecond), activeWait+1))
	}
	return u.wait(events, ms)
}

// lazyWait bounds how long the loop may not hear of its lazy sends'
// completions (the responses' last bytes, sent): with no other event
// by then it takes them in, a response's Done (its access log line)
// that much late.
const lazyWait = 200 * time.Microsecond

// collect turns completions into events, at most len(events); the rest
// wait in the ring for the next call.
func (u *uring) collect(events []unix.EpollEvent) int {
	n := 0
	if len(events) == 0 {
		return 0
	}
	u.r.reap(func(ud uint64, res int32, flags uint32) bool {
		fd := int(uint32(ud))
		var ev uint32
		switch {
		case ud&removeTag != 0:
			return true
		case ud&recvTag != 0:
			var ok bool
			if ev, ok = u.received(fd, uint16(ud>>32), res, flags); !ok {
				return true
			}
		case ud&sendTag != 0:
			if fd >= len(u.fds) || !u.fds[fd].watched || u.fds[fd].epoch != uint16(ud>>32) {
				return true // its connection closed since
			}
			u.fds[fd].sending = false
			// Bytes received while the response was in flight wait
			// to be reported again once it is done.
			u.mark(fd)
			u.stats.UringSends.Add(1)
			events[n] = unix.EpollEvent{Events: evSent, Fd: int32(fd), Pad: res}
			n++
			return n < len(events)
		default:
			if fd >= len(u.fds) || u.fds[fd].gen != uint16(ud>>32) || !u.fds[fd].armed {
				return true // removed, or its descriptor closed since
			}
			u.fds[fd].armed = false
			u.mark(fd)
			ev = uint32(res)
			if res < 0 {
				ev = unix.EPOLLERR
			}
		}
		events[n] = unix.EpollEvent{Events: ev, Fd: int32(fd)}
		n++
		return n < len(events)
	})
	return n
}

// received keeps what a receive on fd brought for the loop's read, and
// says whether to report EPOLLIN now (fd is watched for it).
func (u *uring) received(fd int, epoch uint16, res int32, flags uint32) (uint32, bool) {
	u.receives--
	bid, hasBuf := uint16(flags>>16), flags&cqeFBuffer != 0
	if hasBuf && res <= 0 {
		u.bufs.give(bid)
		hasBuf = false
	}
	if fd >= len(u.fds) || !u.fds[fd].watched || u.fds[fd].epoch != epoch {
		if hasBuf {
			u.bufs.give(bid) // its connection closed since
		}
		return 0, false
	}
	w := &u.fds[fd]
	w.receiving = false
	u.mark(fd)
	switch {
	case hasBuf:
		w.held, w.off, w.n = bid+1, 0, uint16(res)
		u.stats.UringReceives.Add(1)
	case res == 0:
		w.end = 1
	case res == -int32(unix.ENOBUFS):
		// Every buffer is held: nothing is kept, and the loop reads
		// the socket itself.
		u.stats.UringNoBuffers.Add(1)
	case res < 0:
		w.end = int16(max(res, -4095))
	default:
		w.end = -int16(unix.EIO) // bytes without a buffer: not asked for
	}
	if w.ev&unix.EPOLLIN == 0 {
		return 0, false // reported by arm once EPOLLIN is watched again
	}
	return unix.EPOLLIN, true
}

// read reads fd's bytes: those a receive brought, or the socket's
// (after a receive found no buffer, or for a descriptor not received
// from). A receive's end (the peer's close, an error) is read once its
// bytes are, and again by every later read.
func (u *uring) read(fd int, p []byte) (int, error) {
	if fd < len(u.fds) {
		w := &u.fds[fd]
		switch {
		case w.held != 0:
			k := copy(p, u.bufs.buf(w.held - 1)[w.off:w.n])
			w.off += uint16(k)
			if w.off == w.n {
				u.bufs.give(w.held - 1)
				w.held = 0
			} else {
				u.mark(fd) // level-triggered: the rest is reported at the next wait
			}
			return k, nil
		case w.end > 0:
			return 0, nil
		case w.end < 0:
			return 0, unix.Errno(-w.end)
		}
	}
	return rawRead(fd, p)
}

// buffered says whether bytes received on fd wait to be read.
func (u *uring) buffered(fd int) bool { return fd < len(u.fds) && u.fds[fd].held != 0 }

func (u *uring) close() error {
	if u.began {
		u.drainReceives()
	}
	u.end()
	err := u.r.close()
	if u.bufs != nil && u.receives == 0 {
		// With a receive still in flight the kernel may yet write into
		// a buffer: the mapping is left (its pages are freed with the
		// process) rather than risk a write into memory reused since.
		u.bufs.close()
	}
	return err
}

// drainReceives submits what is queued (the closed connections' cancellations)
// and reaps until no receive is in flight, for at most about a second.
func (u *uring) drainReceives() {
	for range 100 {
		if u.receives == 0 {
			return
		}
		if err := u.r.enter(1, enterGetEvents, int64(10*time.Millisecond), false); err != nil {
			return
		}
		u.r.reap(func(ud uint64, res int32, flags uint32) bool {
			if ud&recvTag != 0 {
				u.receives--
				if flags&cqeFBuffer != 0 {
					u.bufs.give(uint16(flags >> 16))
				}
			}
			return true
		})
	}
}

// probeRing sets up a ring as a loop would, and closes it: nil when the
// kernel lets this process use io_uring with what the poller needs.
func probeRing() error {
	r, err := newRing(new(Stats))
	if err != nil {
		return err
	}
	b, err := newRecvBufs(r)
	if err != nil {
		r.close()
		return err
	}
	err = r.close()
	b.close()
	return err
}

// choosePoller resolves Config.Poller: auto is io_uring where probe
// succeeds, and epoll where the kernel refuses it (EPERM under a seccomp
// profile or kernel.io_uring_disabled, ENOSYS, EINVAL on a kernel
// without the flags), logged once and counted.
func (e *Engine) choosePoller(probe func() error) (func(*Stats) (poller, error), error) {
	e.poller = PollerEpoll
	switch e.cfg.Poller {
	case "", PollerEpoll:
		return newEpoll, nil
	case PollerUring, PollerAuto:
	default:
		return nil, fmt.Errorf("loop: poller %q, want %s, %s or %s", e.cfg.Poller, PollerEpoll, PollerUring, PollerAuto)
	}
	err := probe()
	switch {
	case err == nil:
		e.poller = PollerUring
		return newUring, nil
	case e.cfg.Poller == PollerUring:
		return nil, fmt.Errorf("loop: -poller uring: io_uring refused: %w", err)
	}
	e.stats.PollerFallbacks.Add(1)
	e.log.Warn("io_uring refused: the event loops use epoll", "err", err)
	return newEpoll, nil
}
