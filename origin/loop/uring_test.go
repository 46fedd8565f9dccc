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
// uring step asks it (SEGORIGIN_TEST_POLLER=uring), first: where it
// fails, the suites on -poller uring are left out rather than failed.
func TestRingAvailable(t *testing.T) {
	if os.Getenv("SEGORIGIN_TEST_POLLER") != PollerUring {
		t.Skip("asked by make uring only")
	}
	if err := probeRing(); err != nil {
		t.Fatal(err)
	}
}
