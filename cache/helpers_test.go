package cache_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"segorigin/cache"
)

// fixture is a media root in a temp dir, with Open and Stat funcs that count
// their calls and a clock that moves only when told.
type fixture struct {
	t     testing.TB
	dir   string
	opens atomic.Int64 // Open calls
	stats atomic.Int64 // Stat calls

	// openHook, if set, runs before every Open; a non-nil error is returned
	// instead of opening.
	openHook func(name string) error
	// afterOpen, if set, runs after every successful Open.
	afterOpen func(name string)

	mu    sync.Mutex // protects clock
	clock time.Time
}

func newFixture(t testing.TB, files map[string]string) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir(), clock: time.Unix(1_700_000_000, 0)}
	for name, content := range files {
		f.write(name, content)
	}
	return f
}

func (f *fixture) path(name string) string {
	return filepath.Join(f.dir, filepath.FromSlash(name))
}

// write creates or truncates name in place (same inode if it exists).
func (f *fixture) write(name, content string) {
	f.t.Helper()
	p := f.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// replace writes content to a temporary file and renames it over name: a
// new inode, as a packager's atomic publish does.
func (f *fixture) replace(name, content string, mtime time.Time) {
	f.t.Helper()
	tmp := f.path(name) + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(tmp, mtime, mtime); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, f.path(name)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) open(name string) (*os.File, error) {
	f.opens.Add(1)
	if f.openHook != nil {
		if err := f.openHook(name); err != nil {
			return nil, err
		}
	}
	file, err := os.Open(f.path(name))
	if err == nil && f.afterOpen != nil {
		f.afterOpen(name)
	}
	return file, err
}

func (f *fixture) stat(name string) (fs.FileInfo, error) {
	f.stats.Add(1)
	return os.Stat(f.path(name))
}

func (f *fixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clock
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	f.clock = f.clock.Add(d)
	f.mu.Unlock()
}

// config returns a Config wired to the fixture.
func (f *fixture) config(maxFiles int) cache.Config {
	return cache.Config{
		MaxFiles: maxFiles,
		Open:     f.open,
		Stat:     f.stat,
		Now:      f.now,
	}
}

// newCache builds a cache from cfg and, at cleanup, closes it and checks
// that every descriptor it opened is closed (every test releases what it
// acquires).
func newCache(t testing.TB, cfg cache.Config) *cache.Cache {
	t.Helper()
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close() = %v, want nil", err)
		}
		if got := c.Stats().OpenFiles; got != 0 {
			t.Errorf("after Close, Stats().OpenFiles = %d, want 0 (descriptor leak)", got)
		}
	})
	return c
}

// acquire is Acquire that fails the test on error.
func acquire(t testing.TB, c *cache.Cache, name string) *cache.Handle {
	t.Helper()
	h, err := c.Acquire(name)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return h
}

// content reads the whole file through the raw descriptor with pread, as
// the sendfile path would, and through File.ReadAt, and checks they agree.
func content(t *testing.T, h *cache.Handle) string {
	t.Helper()
	buf := make([]byte, h.Size)
	n, err := syscall.Pread(h.Fd(), buf, 0)
	if err != nil || int64(n) != h.Size {
		t.Fatalf("pread(fd %d) = %d, %v; want %d bytes", h.Fd(), n, err, h.Size)
	}
	buf2 := make([]byte, h.Size)
	if n, err := h.File.ReadAt(buf2, 0); err != nil || int64(n) != h.Size {
		t.Fatalf("File.ReadAt = %d, %v; want %d bytes", n, err, h.Size)
	}
	if string(buf) != string(buf2) {
		t.Fatalf("pread and ReadAt disagree: %q vs %q", buf, buf2)
	}
	return string(buf)
}

func wantStat(t *testing.T, what string, got, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}
