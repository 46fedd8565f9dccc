package origin

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/cache"
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
	c, err := cache.New(cache.Config{
		Open: func(name string) (*os.File, error) { return os.Open(filepath.Join(root, name)) },
		Stat: func(name string) (os.FileInfo, error) { return os.Stat(filepath.Join(root, name)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := c.Acquire("seg.ts")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
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
