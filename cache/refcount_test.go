package cache_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"

	"segorigin/cache"
)

func TestHitMakesNoSystemCall(t *testing.T) {
	f := newFixture(t, map[string]string{"hls/a.ts": "aaaa"})
	c := newCache(t, f.config(4))

	h1 := acquire(t, c, "hls/a.ts")
	h1.Release()
	h2 := acquire(t, c, "hls/a.ts")
	defer h2.Release()

	if h1 != h2 {
		t.Errorf("second Acquire returned a different Handle; want the cached one")
	}
	wantStat(t, "Open calls", f.opens.Load(), 1)
	wantStat(t, "Stat calls", f.stats.Load(), 0)
	s := c.Stats()
	if s.Hits != 1 || s.Misses != 1 {
		t.Errorf("Stats() Hits, Misses = %d, %d; want 1, 1", s.Hits, s.Misses)
	}
	if got := content(t, h2); got != "aaaa" {
		t.Errorf("content = %q, want %q", got, "aaaa")
	}
}

func TestHandleFields(t *testing.T) {
	f := newFixture(t, map[string]string{"a.m4s": "0123456789"})
	c := newCache(t, f.config(4))
	h := acquire(t, c, "a.m4s")
	defer h.Release()

	fi, err := os.Stat(f.path("a.m4s"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Size != 10 || !h.ModTime.Equal(fi.ModTime()) {
		t.Errorf("Size, ModTime = %d, %v; want 10, %v", h.Size, h.ModTime, fi.ModTime())
	}
	if want := cache.ETag(10, fi.ModTime()); h.ETag != want {
		t.Errorf("ETag = %s, want %s", h.ETag, want)
	}
	if h.Inode == 0 {
		t.Errorf("Inode = 0, want the file's inode")
	}
	if h.Fd() < 0 {
		t.Errorf("Fd() = %d, want a descriptor", h.Fd())
	}
}

func TestEvictionKeepsLentDescriptorOpen(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "file a", "b": "file b"})
	c := newCache(t, f.config(1))

	ha := acquire(t, c, "a")
	hb := acquire(t, c, "b") // evicts a while ha is lent out
	defer hb.Release()

	s := c.Stats()
	if s.Evictions != 1 || s.Entries != 1 || s.OpenFiles != 2 {
		t.Errorf("after eviction: Evictions, Entries, OpenFiles = %d, %d, %d; want 1, 1, 2",
			s.Evictions, s.Entries, s.OpenFiles)
	}
	if got := content(t, ha); got != "file a" {
		t.Errorf("read through evicted handle = %q, want %q", got, "file a")
	}
	ha.Release()
	wantStat(t, "OpenFiles after last Release of evicted entry", c.Stats().OpenFiles, 1)
	if _, err := ha.File.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadAt after last Release = %v, want os.ErrClosed", err)
	}

	h := acquire(t, c, "a") // a miss again: evicts b, still lent out
	defer h.Release()
	wantStat(t, "Open calls", f.opens.Load(), 3)
	if got := content(t, hb); got != "file b" {
		t.Errorf("read through evicted b = %q, want %q", got, "file b")
	}
}

func TestInvalidateDuringUse(t *testing.T) {
	f := newFixture(t, map[string]string{"v/seg.ts": "old"})
	c := newCache(t, f.config(4))

	h := acquire(t, c, "v/seg.ts")
	f.replace("v/seg.ts", "new!", time.Time{})
	c.Invalidate("v/seg.ts")

	s := c.Stats()
	if s.Entries != 0 || s.OpenFiles != 1 || s.Invalidations != 1 {
		t.Errorf("after Invalidate: Entries, OpenFiles, Invalidations = %d, %d, %d; want 0, 1, 1",
			s.Entries, s.OpenFiles, s.Invalidations)
	}
	if got := content(t, h); got != "old" {
		t.Errorf("lent handle reads %q after Invalidate, want the old file %q", got, "old")
	}
	h2 := acquire(t, c, "v/seg.ts")
	if h2 == h {
		t.Fatalf("Acquire after Invalidate returned the invalidated Handle")
	}
	if got := content(t, h2); got != "new!" {
		t.Errorf("Acquire after Invalidate reads %q, want %q", got, "new!")
	}
	h.Release()
	wantStat(t, "OpenFiles", c.Stats().OpenFiles, 1)
	h2.Release()
	wantStat(t, "OpenFiles (new file listed)", c.Stats().OpenFiles, 1)
}

func TestInvalidatePrefix(t *testing.T) {
	names := []string{"a/b/1.ts", "a/b/2.ts", "a/bc/3.ts", "a/4.ts", "z.ts"}
	files := map[string]string{}
	for _, n := range names {
		files[n] = n
	}
	f := newFixture(t, files)

	tests := []struct {
		name string
		dir  string
		kept []string
	}{
		{"directory", "a/b", []string{"a/bc/3.ts", "a/4.ts", "z.ts"}},
		{"trailing slash", "a/b/", []string{"a/bc/3.ts", "a/4.ts", "z.ts"}},
		{"parent", "a", []string{"z.ts"}},
		{"exact file", "a/4.ts", []string{"a/b/1.ts", "a/b/2.ts", "a/bc/3.ts", "z.ts"}},
		{"everything", "", nil},
		{"no match", "q", names},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, f.config(16))
			for _, n := range names {
				acquire(t, c, n).Release()
			}
			c.InvalidatePrefix(tt.dir)
			if got := c.Stats().Entries; got != len(tt.kept) {
				t.Errorf("InvalidatePrefix(%q): Entries = %d, want %d", tt.dir, got, len(tt.kept))
			}
			before := f.opens.Load()
			for _, n := range tt.kept {
				acquire(t, c, n).Release()
			}
			if got := f.opens.Load() - before; got != 0 {
				t.Errorf("InvalidatePrefix(%q) dropped %d of %v, want none", tt.dir, got, tt.kept)
			}
		})
	}
}

func TestDirectoryRefused(t *testing.T) {
	f := newFixture(t, map[string]string{"dir/x.ts": "x"})
	c := newCache(t, f.config(4))
	for i := range 2 {
		_, err := c.Acquire("dir")
		if !errors.Is(err, cache.ErrIsDir) {
			t.Fatalf("Acquire(dir) #%d = %v, want ErrIsDir", i, err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != "dir" {
			t.Errorf("Acquire(dir) error %v is not an *fs.PathError for %q", err, "dir")
		}
	}
	s := c.Stats()
	if s.Entries != 0 || s.OpenFiles != 0 || s.NegativeEntries != 0 {
		t.Errorf("after directory: Entries, NegativeEntries, OpenFiles = %d, %d, %d; want 0, 0, 0",
			s.Entries, s.NegativeEntries, s.OpenFiles)
	}
	wantStat(t, "Open calls (directories are not cached)", f.opens.Load(), 2)
}

func TestMaxFilesZeroCachesNothing(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "aa"})
	c := newCache(t, f.config(0))

	h1 := acquire(t, c, "a")
	h2 := acquire(t, c, "a")
	if h1 == h2 {
		t.Errorf("MaxFiles 0: two Acquires share a Handle; want separate opens")
	}
	wantStat(t, "OpenFiles with two lent", c.Stats().OpenFiles, 2)
	h1.Release()
	h2.Release()
	wantStat(t, "OpenFiles after Release", c.Stats().OpenFiles, 0)
	if _, err := c.Acquire("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Acquire(missing) = %v, want fs.ErrNotExist", err)
	}
	if _, err := c.Acquire("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Acquire(missing) = %v, want fs.ErrNotExist", err)
	}
	wantStat(t, "Open calls", f.opens.Load(), 4)
	c.Invalidate("a")
	c.InvalidatePrefix("")
	if n := c.Shed(); n != 0 {
		t.Errorf("Shed() = %d, want 0", n)
	}
}

func TestCloseUnlistsButLentHandlesWork(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "aa", "b": "bb"})
	c := newCache(t, f.config(4))
	h := acquire(t, c, "a")
	acquire(t, c, "b").Release()
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	wantStat(t, "OpenFiles after Close with one lent", c.Stats().OpenFiles, 1)
	if got := content(t, h); got != "aa" {
		t.Errorf("lent handle after Close reads %q, want %q", got, "aa")
	}
	h.Release()
	wantStat(t, "OpenFiles", c.Stats().OpenFiles, 0)

	h = acquire(t, c, "b") // still works, uncached
	h.Release()
	wantStat(t, "OpenFiles after Acquire/Release on a closed cache", c.Stats().OpenFiles, 0)
}

// A caller that releases twice drives the count of a listed entry to zero
// and closes its descriptor. tryRef's refusal at zero turns the next lookup
// into a miss instead of lending the closed (or reused) descriptor.
func TestDoubleReleaseBecomesMiss(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "aa"})
	c := newCache(t, f.config(4))
	h := acquire(t, c, "a")
	h.Release()
	h.Release() // the bug: steals the cache's reference

	h2 := acquire(t, c, "a")
	defer h2.Release()
	if h2 == h {
		t.Fatalf("Acquire after double Release lent the closed Handle")
	}
	if got := content(t, h2); got != "aa" {
		t.Errorf("content = %q, want %q", got, "aa")
	}
	wantStat(t, "OpenFiles", c.Stats().OpenFiles, 1)

	defer func() {
		if recover() == nil {
			t.Errorf("third Release did not panic")
		}
	}()
	h.Release()
}

// TestHandleKeepsCallerValues: what a caller keeps with a Handle (its
// parse, the time it found the bytes final) is seen by every holder of
// the same Handle and by none of a new version's; the first parse set
// stays.
func TestHandleKeepsCallerValues(t *testing.T) {
	f := newFixture(t, map[string]string{"live.m3u8": "#EXTM3U\n"})
	c := newCache(t, f.config(4))
	h := acquire(t, c, "live.m3u8")
	defer h.Release()
	if h.Parsed() != nil || h.Settled() != 0 || h.Predicted() != 0 {
		t.Fatalf("a new Handle: Parsed %v, Settled %d, Predicted %d; want nil, 0, 0", h.Parsed(), h.Settled(), h.Predicted())
	}
	first, second := new(int), new(int)
	h.SetParsed(first)
	h.SetParsed(second)
	h.SetSettled(42)
	h.SetPredicted(7)
	same := acquire(t, c, "live.m3u8")
	defer same.Release()
	if same.Parsed() != first || same.Settled() != 42 || same.Predicted() != 7 {
		t.Errorf("another holder: Parsed %p, Settled %d, Predicted %d; want the first parse %p, 42, 7", same.Parsed(), same.Settled(), same.Predicted(), first)
	}
	f.replace("live.m3u8", "#EXTM3U\n#EXT-X-VERSION:9\n", time.Unix(1_700_000_100, 0))
	c.Invalidate("live.m3u8")
	next := acquire(t, c, "live.m3u8")
	defer next.Release()
	if next.Parsed() != nil || next.Settled() != 0 || next.Predicted() != 0 {
		t.Errorf("the next version's Handle: Parsed %v, Settled %d, Predicted %d; want nil, 0, 0", next.Parsed(), next.Settled(), next.Predicted())
	}
}
