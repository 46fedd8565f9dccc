//go:build linux

package loop

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// parker is where an idle epoll loop waits: an epoll instance whose one
// entry is the loop's epoll descriptor (readable while it has events ready), given
// to Go's netpoller. The entry is armed only while the loop is parked:
// armed for good, every event of a busy loop would also wake the
// netpoller's thread for nothing.
type parker struct {
	file *os.File
	raw  syscall.RawConn // file's, for the wait
	set  int64           // the deadline file has now (Unix ns; -1 none)
	pfd  int             // the loop's epoll descriptor

	// What a wait's check reads and leaves (check, bound once in
	// newParker: a closure made per wait would be three allocations a
	// park, and a loop may park once a request).
	p      poller
	events []unix.EpollEvent
	n      int
	werr   error
	check  func(uintptr) bool
}

func newParker(pfd int) (*parker, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("loop: epoll_create1 (park): %w", err)
	}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, pfd, &unix.EpollEvent{Fd: int32(pfd)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("loop: epoll_ctl (park): %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil { // os.NewFile gives only a non-blocking descriptor to the netpoller
		unix.Close(fd)
		return nil, fmt.Errorf("loop: park descriptor non-blocking: %w", err)
	}
	k := &parker{file: os.NewFile(uintptr(fd), "loop-park"), set: -1, pfd: pfd}
	rc, err := k.file.SyscallConn()
	if err != nil {
		k.file.Close()
		return nil, fmt.Errorf("loop: park descriptor on the netpoller: %w", err)
	}
	k.raw = rc
	k.check = k.ready
	return k, nil
}

// arm sets what the entry waits for: EPOLLIN while parked, nothing
// otherwise.
func (k *parker) arm(ev uint32) error {
	if err := rawEpollCtl(int(k.file.Fd()), unix.EPOLL_CTL_MOD, k.pfd, &unix.EpollEvent{Events: ev, Fd: int32(k.pfd)}); err != nil {
		return fmt.Errorf("loop: epoll_ctl (park): %w", err)
	}
	return nil
}

// wait waits on Go's netpoller until p has events ready (returned) or
// next (Unix ns, -1 none) has passed (n 0).
func (k *parker) wait(p poller, events []unix.EpollEvent, next int64) (n int, err error) {
	if next != k.set {
		var d time.Time
		if next >= 0 {
			d = time.Unix(0, next)
		}
		if err := k.file.SetReadDeadline(d); err != nil {
			return 0, fmt.Errorf("loop: deadline on the park descriptor: %w", err)
		}
		k.set = next
	}
	if err := k.arm(unix.EPOLLIN); err != nil {
		return 0, err
	}
	k.p, k.events, k.n, k.werr = p, events, 0, nil
	rerr := k.raw.Read(k.check)
	n, werr := k.n, k.werr
	k.p, k.events = nil, nil
	if err := k.arm(0); err != nil {
		return 0, err
	}
	switch {
	case werr != nil:
		return n, werr
	case errors.Is(rerr, os.ErrDeadlineExceeded):
		return 0, nil
	case rerr != nil:
		return 0, fmt.Errorf("loop: wait on the poller's descriptor: %w", rerr)
	}
	return n, nil
}

// ready is the check of a wait, once it is armed: an event that came
// after the last wait raised no edge on the parking descriptor.
func (k *parker) ready(uintptr) bool {
	k.n, k.werr = k.p.wait(k.events, 0)
	return k.n > 0 || (k.werr != nil && !errors.Is(k.werr, unix.EINTR))
}

func (k *parker) close() error { return k.file.Close() }
