package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"segorigin/cache"
)

// versionContent is the content of version v of name: a record naming both,
// repeated to a length that depends on v, so any read tells which file and
// which version it came from and whether it is whole.
func versionContent(name string, v int) []byte {
	rec := fmt.Sprintf("%s#%d;", name, v)
	size := 4096 + 97*(v%7)
	return bytes.Repeat([]byte(rec), size/len(rec)+1)[:size]
}

// checkWhole reads h through its raw descriptor and fails unless the bytes
// are exactly one version of name, with h.Size its length.
func checkWhole(h *cache.Handle, name string) error {
	buf := make([]byte, h.Size)
	n, err := syscall.Pread(h.Fd(), buf, 0)
	if err != nil || int64(n) != h.Size {
		return fmt.Errorf("pread %s = %d, %v; want %d bytes", name, n, err, h.Size)
	}
	prefix := []byte(name + "#")
	if !bytes.HasPrefix(buf, prefix) {
		return fmt.Errorf("%s: read bytes of another file: %.40q", name, buf)
	}
	end := bytes.IndexByte(buf, ';')
	v, err := strconv.Atoi(string(buf[len(prefix):max(end, len(prefix))]))
	if err != nil {
		return fmt.Errorf("%s: unparsable record %.40q", name, buf)
	}
	if want := versionContent(name, v); !bytes.Equal(buf, want) {
		return fmt.Errorf("%s: %d bytes are not version %d whole (want %d bytes)", name, len(buf), v, len(want))
	}
	return nil
}

// TestConcurrentAcquireReleaseInvalidate runs readers against a small cache
// while files are replaced by rename and entries are invalidated, evicted and
// shed. Every read must be one whole version of the file asked for: a
// reference taken on a closed descriptor whose number was reused would read
// another file's bytes.
func TestConcurrentAcquireReleaseInvalidate(t *testing.T) {
	const (
		nfiles   = 12
		readers  = 8
		rounds   = 1500
		replaces = 300
	)
	f := newFixture(t, nil)
	names := make([]string, nfiles)
	for i := range names {
		names[i] = fmt.Sprintf("d%d/seg%d.ts", i%3, i)
		f.write(names[i], string(versionContent(names[i], 0)))
	}
	cfg := f.config(4) // fewer slots than files: constant eviction
	cfg.Revalidate = time.Millisecond
	cfg.Now = time.Now
	c := newCache(t, cfg)

	var stop atomic.Bool
	var readersDone, others sync.WaitGroup
	for r := range readers {
		readersDone.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for range rounds {
				name := names[rng.IntN(nfiles)]
				if rng.IntN(10) == 0 {
					name += ".missing"
				}
				h, err := c.Acquire(name)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Errorf("Acquire(%q): %v", name, err)
					return
				}
				if err := checkWhole(h, name); err != nil {
					t.Error(err)
				}
				h.Release()
			}
		})
	}
	others.Go(func() { // the packager: publishes new versions by rename
		rng := rand.New(rand.NewPCG(99, 2))
		for v := 1; v <= replaces && !stop.Load(); v++ {
			name := names[rng.IntN(nfiles)]
			f.replace(name, string(versionContent(name, v)), time.Time{})
			c.Invalidate(name)
		}
	})
	others.Go(func() { // the watcher and the EMFILE path
		rng := rand.New(rand.NewPCG(7, 3))
		for !stop.Load() {
			switch rng.IntN(4) {
			case 0:
				c.InvalidatePrefix(fmt.Sprintf("d%d", rng.IntN(3)))
			case 1:
				c.InvalidateAll()
			case 2:
				c.Shed()
			case 3:
				c.Invalidate(names[rng.IntN(nfiles)])
			}
			_ = c.Stats()
			time.Sleep(50 * time.Microsecond)
		}
	})
	readersDone.Wait()
	stop.Store(true)
	others.Wait()

	s := c.Stats()
	if s.Entries > 4 {
		t.Errorf("Entries = %d, want <= MaxFiles 4", s.Entries)
	}
	if s.OpenFiles != int64(s.Entries) {
		t.Errorf("with nothing lent: OpenFiles = %d, want Entries = %d", s.OpenFiles, s.Entries)
	}
	t.Logf("stats: %+v", s)
}
