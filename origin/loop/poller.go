//go:build linux

package loop

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// poller is how a loop learns which of its descriptors are ready: the
// seam where a backend other than epoll (io_uring, uring.go) plugs in
// without a copy of the loop. Readiness is reported as unix.EpollEvent
// whatever the backend: a descriptor and EPOLLIN, EPOLLOUT, EPOLLRDHUP,
// EPOLLERR or EPOLLHUP bits, level-triggered (a descriptor still ready
// is reported again by the next wait). Only the loop's thread calls it, but for add
// before the loop starts, and close.
type poller interface {
	// start runs first on the loop's goroutine, before any wait; end
	// runs last there.
	start() error
	end()
	// add starts watching fd for ev (EPOLLIN, EPOLLOUT, EPOLLRDHUP for
	// the peer's FIN alone, or 0 for errors and hang-ups only;
	// EPOLLEXCLUSIVE for a listener several loops share); mod changes
	// what fd is watched for; del stops watching it.
	// A closed descriptor is no longer watched.
	add(fd int, ev uint32) error
	mod(fd int, ev uint32) error
	del(fd int) error
	// addConn adds a connection's socket, watched for EPOLLIN, whose
	// bytes the loop reads with read: io_uring may receive them before
	// it reports EPOLLIN. buffered says whether bytes so received wait.
	addConn(fd int) error
	read(fd int, p []byte) (int, error)
	buffered(fd int) bool
	// send may queue a sendmsg of iov (at most maxSendIov entries) on
	// a connection's socket, whose result the wait reports as evSent
	// (io_uring); false: the loop sends itself. lazy: the completion
	// may wait for the next event.
	send(fd int, iov []unix.Iovec, flags int, lazy bool) bool
	// forget: fd, watched, is about to be closed.
	forget(fd int)
	// wait fills events with what is ready, waiting up to ms
	// milliseconds (-1: until something is, 0: not at all). A wait of
	// 0 to activeWait ms keeps the thread's P, as if the loop were
	// running (the loop yields between such waits); a longer one is a
	// blocking system call the runtime may take the P from.
	wait(events []unix.EpollEvent, ms int) (int, error)
	// park is an idle loop's wait, until an event or next (Unix ns, -1
	// none; n 0 then), as a wait the runtime takes the thread's P from:
	// on Go's netpoller for epoll, in io_uring_enter for io_uring.
	park(events []unix.EpollEvent, next, now int64) (int, error)
	close() error
}

// epoll is the default poller: level-triggered epoll(7), parked on Go's
// netpoller when idle (parker).
type epoll struct {
	epfd int
	pk   *parker
}

func newEpoll(*Stats) (poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("loop: epoll_create1: %w", err)
	}
	pk, err := newParker(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &epoll{epfd: fd, pk: pk}, nil
}

func (p *epoll) add(fd int, ev uint32) error { return p.ctl(unix.EPOLL_CTL_ADD, fd, ev) }
func (p *epoll) addConn(fd int) error        { return p.add(fd, unix.EPOLLIN) }
func (p *epoll) read(fd int, b []byte) (int, error) {
	return rawRead(fd, b)
}
func (p *epoll) buffered(int) bool                      { return false }
func (p *epoll) send(int, []unix.Iovec, int, bool) bool { return false }
func (p *epoll) mod(fd int, ev uint32) error            { return p.ctl(unix.EPOLL_CTL_MOD, fd, ev) }

func (p *epoll) del(fd int) error {
	if err := rawEpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return fmt.Errorf("loop: epoll_ctl del %d: %w", fd, err)
	}
	return nil
}

func (p *epoll) ctl(op, fd int, ev uint32) error {
	if err := rawEpollCtl(p.epfd, op, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)}); err != nil {
		return fmt.Errorf("loop: epoll_ctl %d: %w", fd, err)
	}
	return nil
}

func (p *epoll) wait(events []unix.EpollEvent, ms int) (int, error) {
	if ms < 0 || ms > activeWait {
		return unix.EpollWait(p.epfd, events, ms)
	}
	// A raw system call: the runtime does not see it, so its sysmon
	// never takes the P away (and hands it back through futexes) nor
	// keeps waking every 20 µs after doing so. A signal (preemption, a
	// stop for the collector) ends the wait with EINTR.
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func (p *epoll) park(events []unix.EpollEvent, next, _ int64) (int, error) {
	return p.pk.wait(p, events, next)
}

func (p *epoll) close() error {
	err := unix.Close(p.epfd)
	if cerr := p.pk.close(); err == nil {
		err = cerr
	}
	return err
}

func (p *epoll) start() error  { return nil }
func (p *epoll) end()          {}
func (p *epoll) forget(fd int) {} // closing fd takes it out of the set
