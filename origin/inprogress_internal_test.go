package origin

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/cache"
	"segorigin/origin/publish"
)

// TestWriterClosedAfterOpen: a file opened while its writer still had
// bytes to write, which the writer then wrote and closed before the
// publish check, is still in progress for that open: the kernel's "no
// writer" is about now, the open's size about then. Publishing it would
// send a cacheable 200 (immutable) of part of the file.
func TestWriterClosedAfterOpen(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "seg.ts")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(make([]byte, 100_000)); err != nil {
		t.Fatal(err)
	}
	c, h := acquireT(t, root, "seg.ts")
	// The writer writes its last bytes and closes, after the open.
	if _, err := w.Write(make([]byte, 50_000)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, known := writerOpen(h.Fd()); !known {
		t.Fatalf("the kernel does not say whether %s has a writer here (leases refused): this test needs it", path)
	}
	cfg := DefaultConfig()
	cfg.Settle, cfg.Now = time.Second, time.Now
	pb := newPublisher(cfg, new(atomic.Int64), func(string) {}, func(s string) string { return s })
	for _, opened := range []bool{true, false} {
		if !pb.inProgress(h, h.ChangeTime(), opened) {
			t.Errorf("opened %v: a handle of %d bytes of a file of 150000 its writer finished after the open: published", opened, h.Size)
		}
	}
	// Opened again now, the closed file is complete at once.
	c.Invalidate("seg.ts")
	h2, err := c.Acquire("seg.ts")
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release()
	if pb.inProgress(h2, h2.ChangeTime(), true) {
		t.Errorf("the closed file, opened again (%d bytes): still in progress", h2.Size)
	}
}

// TestKernelAnswerKeptBriefly: the kernel's word that a file its writer
// closed is final is kept with the handle for finalFor: the requests
// within it (a live part every player fetches at once) do not ask again;
// one after it does, and so does one after the watcher noted a write of
// the file, which then finds the writer that holds it.
func TestKernelAnswerKeptBriefly(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "part.m4s")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	_, h := acquireT(t, root, "part.m4s")
	if _, known := writerOpen(h.Fd()); !known {
		t.Fatalf("the kernel does not say whether %s has a writer here (leases refused): this test needs it", path)
	}
	var clock atomic.Int64 // the server's now, Unix nanoseconds
	clock.Store(time.Now().UnixNano())
	cfg := DefaultConfig()
	cfg.Settle = time.Hour // written just now: the rule alone says in progress
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	pb := newPublisher(cfg, new(atomic.Int64), func(string) {}, func(s string) string { return s })
	asked := 0
	pb.ask = func(h *cache.Handle) (bool, bool) { asked++; return closedAsOpened(h) }
	requests := func(want bool, n int) {
		t.Helper()
		for range n {
			if got := pb.inProgress(h, h.ChangeTime(), false); got != want {
				t.Fatalf("in progress %v, want %v", got, want)
			}
		}
	}

	requests(false, 100)
	if asked != 1 {
		t.Fatalf("100 requests at one moment: the kernel asked %d times, want 1", asked)
	}
	clock.Add(int64(finalFor))
	requests(false, 1)
	if asked != 2 {
		t.Fatalf("a request finalFor later: the kernel asked %d times in all, want 2", asked)
	}
	// A writer opens it again and the watcher reports its write, within
	// finalFor of the last answer: asked again, it is in progress.
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	clock.Add(1)
	pb.noteWrite("part.m4s")
	clock.Add(1)
	requests(true, 2)
	if asked != 4 {
		t.Fatalf("after a write noted: the kernel asked %d times in all, want 4 (each request while a writer holds it)", asked)
	}
	// A clock stepped back: the kept answer is not trusted.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pb.writes = publish.Writes{}
	requests(false, 1)
	clock.Add(-int64(time.Second))
	requests(false, 1)
	if asked != 6 {
		t.Fatalf("the clock stepped back: the kernel asked %d times in all, want 6", asked)
	}
}

// acquireT is a cache over root and its handle of name, both released
// when t ends.
func acquireT(t *testing.T, root, name string) (*cache.Cache, *cache.Handle) {
	t.Helper()
	c, err := cache.New(cache.Config{
		Open: func(name string) (*os.File, error) { return os.Open(filepath.Join(root, name)) },
		Stat: func(name string) (os.FileInfo, error) { return os.Stat(filepath.Join(root, name)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h, err := c.Acquire(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Release)
	return c, h
}
