//go:build linux

package loop

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPollerChoice: -poller auto falls back to epoll, said once in the
// log and counted, when the kernel refuses io_uring (EPERM under a
// seccomp profile or kernel.io_uring_disabled, ENOSYS where the system
// call is filtered or absent); -poller uring fails instead.
func TestPollerChoice(t *testing.T) {
	for _, tc := range []struct {
		name, poller string
		refusal      error
		want         func(*Stats) (poller, error) // nil: New fails
		fallback     bool
	}{
		{"default", "", nil, newEpoll, false},
		{"epoll", PollerEpoll, unix.EPERM, newEpoll, false},
		{"uring", PollerUring, nil, newUring, false},
		{"uring refused", PollerUring, unix.EPERM, nil, false},
		{"auto", PollerAuto, nil, newUring, false},
		{"auto under seccomp", PollerAuto, unix.EPERM, newEpoll, true},
		{"auto without the system call", PollerAuto, unix.ENOSYS, newEpoll, true},
		{"unknown", "kqueue", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			e := &Engine{cfg: Config{Poller: tc.poller}, log: slog.New(slog.NewTextHandler(&logged, nil)), stats: new(Stats)}
			probes := 0
			got, err := e.choosePoller(func() error { probes++; return tc.refusal })
			switch {
			case tc.want == nil && err == nil:
				t.Fatalf("choosePoller(%q) with refusal %v: no error, want one", tc.poller, tc.refusal)
			case tc.want == nil:
				return
			case err != nil:
				t.Fatalf("choosePoller(%q) with refusal %v: %v", tc.poller, tc.refusal, err)
			}
			if reflect.ValueOf(got).Pointer() != reflect.ValueOf(tc.want).Pointer() {
				t.Errorf("choosePoller(%q) with refusal %v: not the poller wanted", tc.poller, tc.refusal)
			}
			name := PollerEpoll
			if reflect.ValueOf(tc.want).Pointer() == reflect.ValueOf(newUring).Pointer() {
				name = PollerUring
			}
			if e.Poller() != name {
				t.Errorf("choosePoller(%q) with refusal %v: Poller() %q, want %q", tc.poller, tc.refusal, e.Poller(), name)
			}
			lines := strings.Count(logged.String(), "io_uring refused")
			if fb := e.stats.PollerFallbacks.Load(); (fb == 1) != tc.fallback || (lines == 1) != tc.fallback || fb > 1 || lines > 1 {
				t.Errorf("choosePoller(%q) with refusal %v: %d fallbacks counted, %d log lines; want %v", tc.poller, tc.refusal, fb, lines, tc.fallback)
			}
			if tc.fallback && !strings.Contains(logged.String(), tc.refusal.Error()) {
				t.Errorf("log %q does not say why (%v)", logged.String(), tc.refusal)
			}
		})
	}
}

// TestRingRefusalIsAnError: where this kernel has io_uring, the probe
// succeeds; where it refuses, the error says so (and auto falls back).
func TestRingRefusalIsAnError(t *testing.T) {
	err := probeRing()
	if err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		t.Fatalf("probeRing: %v: want nil or a refusal", err)
	}
}

// TestRingABI: the structures shared with the kernel have its sizes
// (include/uapi/linux/io_uring.h).
func TestRingABI(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_sqe", unsafe.Sizeof(sqe{}), 64},
		{"io_uring_cqe", unsafe.Sizeof(cqe{}), 16},
		{"io_uring_params", unsafe.Sizeof(params{}), 120},
		{"io_uring_getevents_arg", unsafe.Sizeof(getEventsArg{}), 24},
		{"io_uring_sqe.user_data offset", unsafe.Offsetof(sqe{}.userData), 32},
		{"io_uring_params.sq_off offset", unsafe.Offsetof(params{}.sqOff), 40},
	} {
		if tc.got != tc.want {
			t.Errorf("sizeof %s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestRingAvailable fails where the kernel refuses io_uring. Only make's
// uring step asks it (TEST_POLLER=uring), first: where it
// fails, the suites on -poller uring are left out rather than failed.
func TestRingAvailable(t *testing.T) {
	if os.Getenv("TEST_POLLER") != PollerUring {
		t.Skip("asked by make uring only")
	}
	if err := probeRing(); err != nil {
		t.Fatal(err)
	}
}

// TestUringSendQueued: a send queued in the ring leaves with the next
// wait, which reports its completion (evSent, the bytes sent in Pad); a
// send queued for a connection that closes before that wait never
// leaves (the descriptor's number may be a new connection's by then).
// A lazy send's completion comes back though nothing else happens.
func TestUringSendQueued(t *testing.T) {
	p, err := newUring(new(Stats))
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("this kernel refuses io_uring: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	u := p.(*uring)
	if err := u.start(); err != nil {
		t.Fatal(err)
	}
	defer u.close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if err := u.addConn(fds[0]); err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello")
	iov := []unix.Iovec{{Base: &msg[0]}}
	iov[0].SetLen(len(msg))
	events := make([]unix.EpollEvent, 8)
	if !u.send(fds[0], iov, 0, false) {
		t.Fatal("send not queued")
	}
	n, err := u.wait(events, 1000)
	if err != nil || n != 1 || events[0].Events != evSent || int(events[0].Fd) != fds[0] || events[0].Pad != int32(len(msg)) {
		t.Fatalf("wait: %d events %v, %v; want one evSent of %d bytes on %d", n, events[:n], err, len(msg), fds[0])
	}
	got := make([]byte, 16)
	if k, err := unix.Read(fds[1], got); err != nil || string(got[:k]) != "hello" {
		t.Fatalf("peer read %q, %v; want %q", got[:max(k, 0)], err, msg)
	}
	// A lazy send (a response's last bytes): a wait with nothing else
	// to come still returns with its completion, after lazyWait.
	if !u.send(fds[0], iov, 0, true) {
		t.Fatal("lazy send not queued")
	}
	if n, err := u.wait(events, -1); err != nil || n != 1 || events[0].Events != evSent || events[0].Pad != int32(len(msg)) {
		t.Fatalf("wait for a lazy send: %d events %v, %v; want one evSent of %d bytes", n, events[:n], err, len(msg))
	}
	if k, err := unix.Read(fds[1], got); err != nil || string(got[:k]) != "hello" {
		t.Fatalf("peer read %q, %v after a lazy send; want %q", got[:max(k, 0)], err, msg)
	}
	if !u.send(fds[0], iov, 0, false) {
		t.Fatal("second send not queued")
	}
	u.forget(fds[0])
	if n, err := u.wait(events, 0); err != nil || n != 0 {
		t.Fatalf("wait after forget: %d events %v, %v; want none", n, events[:n], err)
	}
	if k, err := unix.Read(fds[1], got); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("peer read %q, %v after the connection was forgotten; want nothing (EAGAIN)", got[:max(k, 0)], err)
	}
}
