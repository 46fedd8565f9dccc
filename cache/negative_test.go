package cache_test

import (
	"errors"
	"io/fs"
	"testing"
	"time"

	"segorigin/cache"
)

func TestNegativeEntryLivesForTTL(t *testing.T) {
	f := newFixture(t, nil)
	cfg := f.config(4)
	cfg.NegativeTTL = 500 * time.Millisecond
	c := newCache(t, cfg)

	for i, step := range []struct {
		advance   time.Duration
		wantOpens int64
	}{
		{0, 1},                      // miss: opens, remembers
		{499 * time.Millisecond, 1}, // inside the TTL: answered from memory
		{1 * time.Millisecond, 2},   // at the TTL: opens again
		{0, 2},
	} {
		f.advance(step.advance)
		if _, err := c.Acquire("live/seg9.ts"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("step %d: Acquire(missing) = %v, want fs.ErrNotExist", i, err)
		}
		wantStat(t, "Open calls", f.opens.Load(), step.wantOpens)
	}
	if got := c.Stats().NegativeHits; got != 2 {
		t.Errorf("NegativeHits = %d, want 2", got)
	}
}

func TestNegativeEntryDefaultTTL(t *testing.T) {
	f := newFixture(t, nil)
	c := newCache(t, f.config(4)) // NegativeTTL 0: 1s
	missing(t, c, "x")
	f.advance(999 * time.Millisecond)
	missing(t, c, "x")
	wantStat(t, "Open calls inside the default TTL", f.opens.Load(), 1)
	f.advance(time.Millisecond)
	missing(t, c, "x")
	wantStat(t, "Open calls after the default TTL", f.opens.Load(), 2)
}

func TestNegativeEntryDisabled(t *testing.T) {
	f := newFixture(t, nil)
	cfg := f.config(4)
	cfg.NegativeTTL = -1
	c := newCache(t, cfg)
	missing(t, c, "x")
	missing(t, c, "x")
	wantStat(t, "Open calls with negative entries off", f.opens.Load(), 2)
}

func TestNegativeEntryInvalidated(t *testing.T) {
	tests := []struct {
		name       string
		invalidate func(c *cache.Cache)
	}{
		{"Invalidate", func(c *cache.Cache) { c.Invalidate("live/new.ts") }},
		{"InvalidatePrefix", func(c *cache.Cache) { c.InvalidatePrefix("live") }},
		{"InvalidateAll", func(c *cache.Cache) { c.InvalidateAll() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			cfg := f.config(4)
			cfg.NegativeTTL = time.Hour
			c := newCache(t, cfg)
			if _, err := c.Acquire("live/new.ts"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Acquire before create = %v, want fs.ErrNotExist", err)
			}
			f.write("live/new.ts", "fresh")
			if _, err := c.Acquire("live/new.ts"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Acquire inside TTL, not invalidated = %v, want the remembered fs.ErrNotExist", err)
			}
			tt.invalidate(c)
			h := acquire(t, c, "live/new.ts")
			defer h.Release()
			if got := content(t, h); got != "fresh" {
				t.Errorf("content = %q, want %q", got, "fresh")
			}
		})
	}
}

// missing checks that Acquire(name) fails with fs.ErrNotExist.
func missing(t *testing.T, c *cache.Cache, name string) {
	t.Helper()
	if h, err := c.Acquire(name); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			h.Release()
		}
		t.Fatalf("Acquire(%q) = %v, want fs.ErrNotExist", name, err)
	}
}
