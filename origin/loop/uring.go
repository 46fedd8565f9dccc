//go:build linux

package loop

import (
	"fmt"
	"runtime"

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
// The ring is SINGLE_ISSUER and DEFER_TASKRUN: completions run only in
// the loop thread's own io_uring_enter, never by interrupting it, so the
// loop's goroutine is locked to its thread from start to end. A parked
// loop waits for an eventfd the ring signals while idle(true).
type uring struct {
	r     *ring
	efd   int // signalled by the ring while the loop is parked
	fds   []watch
	dirty []int32 // descriptors whose request is to be armed at the next wait
	began bool
}

// watch is what one descriptor is watched for.
type watch struct {
	ev      uint32 // EPOLLIN, EPOLLOUT, EPOLLRDHUP (a poll mask's POLLRDHUP), EPOLLEXCLUSIVE, or 0 (errors and hang-ups only)
	gen     uint32 // the generation of its current request
	armedEv uint32 // ev of the request in flight
	watched bool
	armed   bool // a request is in flight
	dirty   bool // listed in dirty
}

// removeTag marks a POLL_REMOVE's own completion.
const removeTag = 1 << 63

func newUring(stats *Stats) (poller, error) {
	r, err := newRing(stats)
	if err != nil {
		return nil, err
	}
	efd, err := newEventfd(r)
	if err != nil {
		return nil, err
	}
	u := &uring{r: r, efd: efd}
	r.signals(false)
	if err := r.notify(efd); err != nil {
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
	w.ev, w.watched = ev, true
	u.mark(fd)
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

// forget removes fd's request with the next wait's submissions: a
// request holds its file, so a descriptor closed with one in flight
// would stay open until then.
func (u *uring) forget(fd int) {
	if fd >= len(u.fds) {
		return
	}
	if u.fds[fd].armed {
		u.remove(fd) // fails only when the full queue cannot be submitted: the ring is broken, and the next wait says so
	}
	u.fds[fd].watched = false
}

// remove queues the removal of fd's request in flight; its completion,
// and the request's own (-ECANCELED), are dropped.
func (u *uring) remove(fd int) error {
	w := &u.fds[fd]
	s, err := u.r.next()
	if err != nil {
		return err
	}
	s.opcode, s.fd, s.addr, s.userData = opPollRemove, -1, userData(fd, w.gen), removeTag
	w.gen++
	w.armed = false
	return nil
}

func (u *uring) mark(fd int) {
	if w := &u.fds[fd]; !w.dirty {
		w.dirty = true
		u.dirty = append(u.dirty, int32(fd))
	}
}

func userData(fd int, gen uint32) uint64 { return uint64(gen)<<32 | uint64(uint32(fd)) }

// arm queues a poll request for each watched descriptor that has none.
func (u *uring) arm() error {
	for i, fd := range u.dirty {
		w := &u.fds[fd]
		if !w.dirty {
			continue
		}
		if w.watched && !w.armed {
			s, err := u.r.next()
			if err != nil {
				u.dirty = u.dirty[i:]
				return err
			}
			s.opcode, s.fd, s.userData = opPollAdd, fd, userData(int(fd), w.gen)
			s.opFlags = w.ev | unix.EPOLLERR | unix.EPOLLHUP
			w.armed, w.armedEv = true, w.ev
		}
		w.dirty = false
	}
	u.dirty = u.dirty[:0]
	return nil
}

// wait arms what needs arming, submits it, and reports the completions:
// one io_uring_enter, none when completions are already waiting.
func (u *uring) wait(events []unix.EpollEvent, ms int) (int, error) {
	if err := u.arm(); err != nil {
		return 0, err
	}
	n := u.collect(events)
	min := uint32(1)
	if n > 0 || ms == 0 {
		min = 0
	}
	if n > 0 && u.r.pending() == 0 {
		return n, nil
	}
	if err := u.r.enter(min, enterGetEvents, ms, ms >= 0 && ms <= activeWait); err != nil {
		return n, err
	}
	return n + u.collect(events[n:]), nil
}

// collect turns completions into events, at most len(events); the rest
// wait in the ring for the next call.
func (u *uring) collect(events []unix.EpollEvent) int {
	n := 0
	if len(events) == 0 {
		return 0
	}
	u.r.reap(func(ud uint64, res int32) bool {
		if ud&removeTag != 0 {
			return true
		}
		fd, gen := int(uint32(ud)), uint32(ud>>32)
		if fd >= len(u.fds) || u.fds[fd].gen != gen || !u.fds[fd].armed {
			return true // removed, or its descriptor closed since
		}
		w := &u.fds[fd]
		w.armed = false
		u.mark(fd)
		ev := uint32(res)
		if res < 0 {
			ev = unix.EPOLLERR
		}
		events[n] = unix.EpollEvent{Events: ev, Fd: int32(fd)}
		n++
		return n < len(events)
	})
	return n
}

// fd is the eventfd the ring signals while the loop is parked.
func (u *uring) fd() int { return u.efd }

// idle turns the eventfd's signals on before the loop parks, with what
// an earlier park left in it drained, and off once it runs again.
func (u *uring) idle(on bool) {
	u.r.signals(on)
	if on {
		var b [8]byte
		unix.Read(u.efd, b[:])
	}
}

func (u *uring) close() error {
	u.end()
	err := u.r.close()
	unix.Close(u.efd)
	return err
}

// probeRing sets up a ring as a loop would, and closes it: nil when the
// kernel lets this process use io_uring with what the poller needs.
func probeRing() error {
	r, err := newRing(new(Stats))
	if err != nil {
		return err
	}
	return r.close()
}

// choosePoller resolves Config.Poller: auto is io_uring where probe
// succeeds, and epoll where the kernel refuses it (EPERM under a seccomp
// profile or kernel.io_uring_disabled, ENOSYS, EINVAL on a kernel
// without the flags), logged once and counted.
func (e *Engine) choosePoller(probe func() error) (func(*Stats) (poller, error), error) {
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
		return newUring, nil
	case e.cfg.Poller == PollerUring:
		return nil, fmt.Errorf("loop: -poller uring: io_uring refused: %w", err)
	}
	e.stats.PollerFallbacks.Add(1)
	e.log.Warn("io_uring refused: the event loops use epoll", "err", err)
	return newEpoll, nil
}
