//go:build linux

package coldread

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

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
	if err := testLoad(t, fd, 4096, 64<<10); err != nil {
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
	if err := testLoad(t, int(f.Fd()), 0, 1<<20); err != nil {
		t.Errorf("Load past the end = %v, want nil", err)
	}
}

// TestLoadNeedsNoBuffer: Load reads into the page cache only, never into
// userspace, so making a megabyte resident allocates next to nothing (a
// read into a buffer of its own would allocate the buffer).
func TestLoadNeedsNoBuffer(t *testing.T) {
	const size = 1 << 20
	fd := coldFD(t, size)
	var before, after runtime.MemStats
	null := testNull(t)
	runtime.ReadMemStats(&before)
	err := load(null, fd, 0, size)
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

// testNull opens /dev/null for load, for the test's duration.
func testNull(t *testing.T) int {
	t.Helper()
	null, err := openNull()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeNull(null) })
	return null
}

func testLoad(t *testing.T, fd int, off, n int64) error {
	t.Helper()
	return load(testNull(t), fd, off, n)
}

// TestLoadWithoutNull: where /dev/null could not be opened, a load reads
// the range instead, and it is resident all the same.
func TestLoadWithoutNull(t *testing.T) {
	const size = 256 << 10
	fd := coldFD(t, size)
	if err := load(-1, fd, 0, size); err != nil {
		t.Fatalf("load without /dev/null: %v", err)
	}
	if ok, err := Resident(fd, 0, size, size); err != nil || !ok {
		t.Errorf("Resident after load = %v, %v; want true, nil", ok, err)
	}
}

// TestPoolHoldsOneNull: a running pool's loads share one /dev/null,
// opened when Run starts and closed when it returns: loads open and close
// no descriptor, and a stopped pool holds none.
func TestPoolHoldsOneNull(t *testing.T) {
	const size = 64 << 10
	f := evicted(t, size)
	before := openFDs(t)
	p, err := New(Config{Readers: 1, Queue: 4, Deadline: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	for i := range 3 {
		var lerr error
		var during int
		if err := p.Do(Key{"f", int64(i)}, false, func() {
			lerr = p.Load(int(f.Fd()), 0, size)
			during = openFDs(t)
		}); err != nil {
			t.Fatalf("Do: %v", err)
		}
		if lerr != nil {
			t.Fatalf("Load: %v", lerr)
		}
		if during != before+1 {
			t.Errorf("load %d: %d descriptors open, want %d (the pool's /dev/null beside the %d before)", i, during, before+1, before)
		}
	}
	cancel()
	wg.Wait()
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open after Run returned, want the %d before", after, before)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // ReadDir's own descriptor
}

// coldFD is an evicted file's descriptor; the test skips where the file
// system keeps the file resident anyway.
func coldFD(t *testing.T, size int) int {
	t.Helper()
	fd := int(evicted(t, size).Fd())
	if ok, _ := Resident(fd, 0, int64(size), int64(size)); ok {
		t.Skip("file still resident after FADV_DONTNEED (this file system ignores it): nothing to observe")
	}
	return fd
}
