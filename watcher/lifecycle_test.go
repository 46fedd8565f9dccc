package watcher

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/fsnotify/fsnotify"

	"segorigin/cache"
)

// The cache is the Invalidator the server wires in.
var _ Invalidator = (*cache.Cache)(nil)

func TestNewValidates(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	rec := &recorder{}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no root", Config{Target: rec}},
		{"no target", Config{Root: dir}},
		{"root missing", Config{Root: filepath.Join(dir, "missing"), Target: rec}},
		{"root is a file", Config{Root: file, Target: rec}},
		{"negative retry", Config{Root: dir, Target: rec, RetryEvery: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(tt.cfg)
			if err == nil {
				w.Close()
				t.Fatalf("New(%+v) = nil error, want an error", tt.cfg)
			}
		})
	}
}

// waitGoroutines waits until the goroutine count is back to n: a goroutine
// may still be on its way out right after the call that ended it returns.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= n })
}

func TestRunLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	root := t.TempDir()
	os.MkdirAll(root+"/a/b", 0o755)
	w, err := New(Config{Root: root, Target: &recorder{}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	os.WriteFile(root+"/a/b/x.ts", []byte("x"), 0o644)
	eventually(t, "an event", func() bool { return w.Stats().Events > 0 })
	if n := runtime.NumGoroutine(); n <= before {
		t.Fatalf("running: %d goroutines, want more than the %d before (fsnotify's reader, Run)", n, before)
	}
	w.fsw.Errors <- fsnotify.ErrEventOverflow // degraded: a retry timer is armed
	eventually(t, "degraded", func() bool { return w.Stats().Degraded })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	waitGoroutines(t, before)
}

func TestCloseWithoutRunLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	w, err := New(Config{Root: t.TempDir(), Target: &recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	waitGoroutines(t, before)
}

func TestRelativeRoot(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(dir+"/media/hls", 0o755)
	t.Chdir(dir)
	h := start(t, options{root: "media"})
	h.write("hls/seg.ts", "x") // relative to the test's cwd via h.path
	h.waitCalls("I hls/seg.ts")
}

func TestSymlinkRoot(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(dir+"/real/hls", 0o755)
	if err := os.Symlink(dir+"/real", dir+"/link"); err != nil {
		t.Fatal(err)
	}
	h := start(t, options{root: dir + "/link"})
	if got := h.w.Stats().WatchedDirs; got != 2 {
		t.Errorf("WatchedDirs = %d, want 2 (the walk must go through the link)", got)
	}
	h.write("hls/seg.ts", "x")
	h.waitCalls("I hls/seg.ts")
}

func TestSymlinkedDirectoryIsAName(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(dir+"/root", 0o755)
	os.MkdirAll(dir+"/elsewhere", 0o755)
	h := start(t, options{root: dir + "/root"})
	if err := os.Symlink(dir+"/elsewhere", h.path("linked")); err != nil {
		t.Fatal(err)
	}
	h.waitCalls("P linked")
	h.sync("")
	if got := h.w.Stats().WatchedDirs; got != 1 {
		t.Errorf("WatchedDirs = %d, want 1: symlinked directories are not watched", got)
	}
}
