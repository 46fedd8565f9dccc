package cache_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func benchFixture(b *testing.B, n int) (*fixture, []string) {
	f := newFixture(b, nil)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("v/seg%03d.m4s", i)
		f.write(names[i], strings.Repeat("x", 1024))
	}
	return f, names
}

// BenchmarkAcquireHit is the hot path: a listed file, taken and returned by
// many goroutines at once.
func BenchmarkAcquireHit(b *testing.B) {
	f, names := benchFixture(b, 64)
	c := newCache(b, f.config(128))
	for _, n := range names {
		acquire(b, c, n).Release()
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h, err := c.Acquire(names[i%len(names)])
			if err != nil {
				b.Fatal(err)
			}
			h.Release()
			i++
		}
	})
}

// BenchmarkAcquireHitRevalidate hits with revalidation on (watcher
// degraded), with a period short enough that some hits stat.
func BenchmarkAcquireHitRevalidate(b *testing.B) {
	f, names := benchFixture(b, 64)
	cfg := f.config(128)
	cfg.Now = time.Now
	cfg.Revalidate = time.Millisecond
	c := newCache(b, cfg)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h, err := c.Acquire(names[i%len(names)])
			if err != nil {
				b.Fatal(err)
			}
			h.Release()
			i++
		}
	})
}

// BenchmarkAcquireUncached is the baseline without a cache (MaxFiles 0):
// open, fstat and close per request.
func BenchmarkAcquireUncached(b *testing.B) {
	f, names := benchFixture(b, 64)
	c := newCache(b, f.config(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h, err := c.Acquire(names[i%len(names)])
			if err != nil {
				b.Fatal(err)
			}
			h.Release()
			i++
		}
	})
}

// BenchmarkOSOpenStatClose is what a handler without this package does, for
// comparison with BenchmarkAcquireUncached (the cache's own overhead).
func BenchmarkOSOpenStatClose(b *testing.B) {
	f, names := benchFixture(b, 64)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			file, err := os.Open(filepath.Join(f.dir, names[i%len(names)]))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := file.Stat(); err != nil {
				b.Fatal(err)
			}
			file.Close()
			i++
		}
	})
}
