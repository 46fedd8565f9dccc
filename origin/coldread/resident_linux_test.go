//go:build linux

package coldread

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// evicted writes a file, flushes it and drops it from the page cache.
func evicted(t *testing.T, size int) *os.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestResidentAfterLoad(t *testing.T) {
	const size = 1 << 20
	f := evicted(t, size)
	fd := int(f.Fd())
	ok, err := Resident(fd, 0, size, size)
	if err != nil {
		t.Fatalf("Resident: %v", err)
	}
	if ok {
		t.Skip("file still resident after FADV_DONTNEED (this file system ignores it): nothing to observe")
	}
	if err := Load(fd, 4096, 64<<10); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if ok, err := Resident(fd, 4096, 64<<10, size); err != nil || !ok {
		t.Errorf("Resident(loaded range) = %v, %v; want true, nil", ok, err)
	}
	if ok, _ := Resident(fd, size/2, 64<<10, size); ok {
		// The kernel's own read-ahead may have brought more in, but not
		// half a megabyte away from a 64 KiB read of a file read once.
		t.Logf("Resident(untouched range) = true: kernel read-ahead reached it")
	}
	if ok, err := Resident(fd, size, 10, size); err != nil || !ok {
		t.Errorf("Resident(past end) = %v, %v; want true, nil (nothing to wait for)", ok, err)
	}
}

func TestLoadStopsAtEOF(t *testing.T) {
	f := evicted(t, 1000)
	if err := Load(int(f.Fd()), 0, 1<<20); err != nil {
		t.Errorf("Load past the end = %v, want nil", err)
	}
}

// TestLoadNeedsNoBuffer: Load reads into the page cache only, never into
// userspace, so making a megabyte resident allocates next to nothing (a
// read into a buffer of its own would allocate the buffer).
func TestLoadNeedsNoBuffer(t *testing.T) {
	const size = 1 << 20
	f := evicted(t, size)
	fd := int(f.Fd())
	if ok, _ := Resident(fd, 0, size, size); ok {
		t.Skip("file still resident after FADV_DONTNEED (this file system ignores it): nothing to observe")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := Load(fd, 0, size)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<10 {
		t.Errorf("Load of %d bytes allocated %d bytes, want at most 4 KiB (no userspace buffer)", size, got)
	}
	if ok, err := Resident(fd, 0, size, size); err != nil || !ok {
		t.Errorf("Resident after Load = %v, %v; want true, nil", ok, err)
	}
}
