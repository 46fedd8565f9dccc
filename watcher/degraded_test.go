package watcher

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchLimit wraps fsnotify's Add so a test can make it fail with ENOSPC,
// as inotify_add_watch does at fs.inotify.max_user_watches.
type watchLimit struct {
	full atomic.Bool
}

func (l *watchLimit) wrap(add func(string) error) func(string) error {
	return func(path string) error {
		if l.full.Load() {
			return fmt.Errorf("inotify_add_watch %s: %w", path, syscall.ENOSPC)
		}
		return add(path)
	}
}

func (h *harness) waitDegraded(want ...bool) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("OnDegraded calls %v (have %v)", want, h.degraded.get()), func() bool {
		return slices.Equal(h.degraded.get(), want)
	})
}

func countAll(calls []string) int {
	n := 0
	for _, c := range calls {
		if c == "A" {
			n++
		}
	}
	return n
}

func TestWatchLimitDegradesAndRecovers(t *testing.T) {
	limit := &watchLimit{}
	h := start(t, options{retryEvery: 20 * time.Millisecond, wrapAdd: limit.wrap})

	limit.full.Store(true)
	h.mkdirAll("new/deeper")
	h.waitDegraded(true)
	if s := h.w.Stats(); !s.Degraded || s.Errors == 0 {
		t.Errorf("at the watch limit: Degraded, Errors = %v, %d; want true, > 0", s.Degraded, s.Errors)
	}
	if calls := h.rec.snapshot(); countAll(calls) != 1 {
		t.Errorf("on degrading: calls %q, want one InvalidateAll", calls)
	}

	// Degraded, a removed name may have been an unwatched directory: the
	// whole prefix goes.
	h.write("f.ts", "x")
	h.waitCalls("I f.ts")
	os.Remove(h.path("f.ts"))
	h.waitCalls("P f.ts")

	// Retries keep failing while the limit holds; nothing more is reported.
	eventually(t, "two rebuild attempts", func() bool { return h.w.Stats().Rebuilds >= 2 })
	if got := h.degraded.get(); !slices.Equal(got, []bool{true}) {
		t.Errorf("while still at the limit: OnDegraded calls %v, want [true]", got)
	}

	h.rec.take()
	limit.full.Store(false)
	h.waitDegraded(true, false)
	if s := h.w.Stats(); s.Degraded || s.WatchedDirs != 3 {
		t.Errorf("recovered: Degraded, WatchedDirs = %v, %d; want false, 3", s.Degraded, s.WatchedDirs)
	}
	if calls := h.rec.snapshot(); countAll(calls) != 1 {
		t.Errorf("on recovering: calls %q, want one InvalidateAll", calls)
	}
	// The directory created at the limit is watched now.
	h.write("new/deeper/seg.ts", "x")
	h.waitCalls("I new/deeper/seg.ts")
}

func TestWatchLimitAtStart(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(root+"/a/b", 0o755)
	limit := &watchLimit{}
	// Fail only below the root, as when the limit is reached mid-walk.
	wrap := func(add func(string) error) func(string) error {
		limited := limit.wrap(add)
		return func(path string) error {
			if strings.HasSuffix(path, "/b") {
				return limited(path)
			}
			return add(path)
		}
	}
	limit.full.Store(true)
	h := start(t, options{root: root, retryEvery: 20 * time.Millisecond, wrapAdd: wrap, noRun: true})
	if got := h.degraded.get(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("New at the watch limit: OnDegraded calls %v, want [true] before New returns", got)
	}
	if !h.w.Stats().Degraded {
		t.Errorf("Stats().Degraded = false, want true")
	}
	limit.full.Store(false)
	h.run()
	h.waitDegraded(true, false)
	h.write("a/b/seg.ts", "x")
	h.waitCalls("I a/b/seg.ts")
}

func TestOverflowDegradesAndRecovers(t *testing.T) {
	h := start(t, options{retryEvery: 20 * time.Millisecond})
	// What fsnotify sends when the kernel queue overflowed (IN_Q_OVERFLOW).
	h.w.fsw.Errors <- fsnotify.ErrEventOverflow
	h.waitDegraded(true, false)
	s := h.w.Stats()
	if s.Overflows != 1 || s.Degraded {
		t.Errorf("after overflow and rebuild: Overflows, Degraded = %d, %v; want 1, false", s.Overflows, s.Degraded)
	}
	// Once when events were lost, once when whole again.
	if calls := h.rec.snapshot(); countAll(calls) != 2 {
		t.Errorf("calls %q, want two InvalidateAll", calls)
	}
}

func TestOtherErrorDegrades(t *testing.T) {
	h := start(t, options{retryEvery: time.Hour})
	h.w.fsw.Errors <- fmt.Errorf("read inotify: %w", syscall.EIO)
	h.waitDegraded(true)
	h.waitCalls("A")
	if s := h.w.Stats(); s.Errors != 1 || !s.Degraded {
		t.Errorf("Errors, Degraded = %d, %v; want 1, true", s.Errors, s.Degraded)
	}
	// A second error while degraded invalidates again but reports nothing.
	h.rec.take()
	h.w.fsw.Errors <- fsnotify.ErrEventOverflow
	h.waitCalls("A")
	if got := h.degraded.get(); !slices.Equal(got, []bool{true}) {
		t.Errorf("OnDegraded calls %v, want [true]", got)
	}
}

func TestRootRemovedDegradesUntilBack(t *testing.T) {
	root := t.TempDir() + "/media"
	os.MkdirAll(root+"/hls", 0o755)
	h := start(t, options{root: root, retryEvery: 10 * time.Millisecond})
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	h.waitDegraded(true)
	h.waitCalls("A")
	if got := h.w.Stats().WatchedDirs; got != 0 {
		t.Errorf("root gone: WatchedDirs = %d, want 0", got)
	}
	os.MkdirAll(root+"/hls", 0o755)
	h.waitDegraded(true, false)
	h.write("hls/seg.ts", "x")
	h.waitCalls("I hls/seg.ts")
}
