package cache_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"
)

func TestRevalidateDetectsChange(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *fixture, mtime time.Time)
		want   string // content after the change; "" means gone
	}{
		{"replace by rename, same size and mtime", func(f *fixture, mtime time.Time) {
			f.replace("seg.ts", "NEW1", mtime) // only the inode differs
		}, "NEW1"},
		{"in-place size change", func(f *fixture, _ time.Time) {
			f.write("seg.ts", "old1+more")
		}, "old1+more"},
		{"in-place mtime change, same size", func(f *fixture, mtime time.Time) {
			f.write("seg.ts", "OLD1")
			later := mtime.Add(time.Second)
			if err := os.Chtimes(f.path("seg.ts"), later, later); err != nil {
				f.t.Fatal(err)
			}
		}, "OLD1"},
		{"in-place write, size and mtime kept (ctime differs)", func(f *fixture, mtime time.Time) {
			f.write("seg.ts", "NEW2")
			if err := os.Chtimes(f.path("seg.ts"), mtime, mtime); err != nil {
				f.t.Fatal(err)
			}
		}, "NEW2"},
		{"removed", func(f *fixture, _ time.Time) {
			if err := os.Remove(f.path("seg.ts")); err != nil {
				f.t.Fatal(err)
			}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"seg.ts": "old1"})
			cfg := f.config(4)
			cfg.Revalidate = time.Second
			c := newCache(t, cfg)

			old := acquire(t, c, "seg.ts")
			defer old.Release()
			tt.change(f, old.ModTime)

			// Inside the period: served from cache, no stat.
			h := acquire(t, c, "seg.ts")
			if h != old {
				t.Errorf("Acquire inside the revalidation period reopened the file")
			}
			h.Release()
			wantStat(t, "Stat calls inside the period", f.stats.Load(), 0)

			f.advance(time.Second)
			h, err := c.Acquire("seg.ts")
			wantStat(t, "Stat calls after the period", f.stats.Load(), 1)
			if tt.want == "" {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Acquire after remove = %v, want fs.ErrNotExist", err)
				}
			} else {
				if err != nil {
					t.Fatalf("Acquire after change: %v", err)
				}
				if got := content(t, h); got != tt.want {
					t.Errorf("Acquire after change reads %q, want %q", got, tt.want)
				}
				h.Release()
			}
			if s := c.Stats(); s.Revalidations != 1 || s.Stale != 1 {
				t.Errorf("Revalidations, Stale = %d, %d; want 1, 1", s.Revalidations, s.Stale)
			}
			// The handle lent before the change still reads the whole old
			// file, except for in-place writes, which by nature change the
			// same inode's bytes.
			if tt.name == "replace by rename, same size and mtime" || tt.want == "" {
				if got := content(t, old); got != "old1" {
					t.Errorf("lent handle reads %q, want the old file %q", got, "old1")
				}
			}
		})
	}
}

func TestRevalidateUnchangedKeepsEntry(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a"})
	cfg := f.config(4)
	cfg.Revalidate = time.Second
	c := newCache(t, cfg)
	h := acquire(t, c, "a")
	h.Release()
	for range 3 {
		f.advance(time.Second)
		if h2 := acquire(t, c, "a"); h2 != h {
			t.Errorf("unchanged file reopened on revalidation")
		} else {
			h2.Release()
		}
	}
	wantStat(t, "Stat calls", f.stats.Load(), 3)
	wantStat(t, "Open calls", f.opens.Load(), 1)
	if got := c.Stats().Stale; got != 0 {
		t.Errorf("Stale = %d, want 0", got)
	}
}

func TestSetRevalidateAtRunTime(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a"})
	c := newCache(t, f.config(4)) // Revalidate 0: the watcher is whole
	acquire(t, c, "a").Release()
	f.replace("a", "b", time.Time{})
	f.advance(time.Hour)
	h := acquire(t, c, "a")
	if got := content(t, h); got != "a" {
		t.Errorf("without revalidation: content = %q, want the cached %q", got, "a")
	}
	h.Release()
	wantStat(t, "Stat calls with revalidation off", f.stats.Load(), 0)

	c.SetRevalidate(time.Second) // the watcher degraded
	h = acquire(t, c, "a")
	if got := content(t, h); got != "b" {
		t.Errorf("with revalidation: content = %q, want %q", got, "b")
	}
	h.Release()

	c.SetRevalidate(0) // whole again
	f.advance(time.Hour)
	acquire(t, c, "a").Release()
	wantStat(t, "Stat calls", f.stats.Load(), 1)
}
