package cache_test

import (
	"testing"
	"time"

	"segorigin/cache"
)

// TestAcquireOutcome: what the access log says of each lookup.
func TestAcquireOutcome(t *testing.T) {
	f := newFixture(t, map[string]string{"a.ts": "0123456789"})
	c := newCache(t, f.config(4))
	for i, step := range []struct {
		name string
		want cache.Outcome
	}{
		{"a.ts", cache.Miss},
		{"a.ts", cache.Hit},
		{"nope.ts", cache.Miss},
		{"nope.ts", cache.NegativeHit},
	} {
		h, got, err := c.AcquireOutcome(step.name)
		if err == nil {
			h.Release()
		}
		if got != step.want {
			t.Errorf("step %d: AcquireOutcome(%q) = %v, want %v", i, step.name, got, step.want)
		}
	}
}

// TestTryAcquire: an event loop's lookup answers hits and remembered
// misses, and says "not ready" (without opening or statting) for anything
// that would need storage: a first lookup, a revalidation that is due.
func TestTryAcquire(t *testing.T) {
	f := newFixture(t, map[string]string{"a.ts": "0123456789"})
	cfg := f.config(4)
	cfg.Revalidate = time.Second
	c := newCache(t, cfg)
	if _, _, _, ready := c.TryAcquire("a.ts"); ready {
		t.Fatal("TryAcquire(a.ts) before any open: ready, want not ready")
	}
	if n := f.opens.Load(); n != 0 {
		t.Fatalf("TryAcquire opened %d files, want 0", n)
	}
	acquire(t, c, "a.ts").Release()
	h, o, err, ready := c.TryAcquire("a.ts")
	if !ready || err != nil || o != cache.Hit {
		t.Fatalf("TryAcquire(a.ts) after open = %v, %v, ready %v; want hit, nil, ready", o, err, ready)
	}
	if got := content(t, h); got != "0123456789" {
		t.Errorf("TryAcquire(a.ts) reads %q, want %q", got, "0123456789")
	}
	h.Release()
	f.advance(2 * time.Second)
	if _, _, _, ready := c.TryAcquire("a.ts"); ready {
		t.Error("TryAcquire(a.ts) with a revalidation due: ready, want not ready")
	}
	if n := f.stats.Load(); n != 0 {
		t.Errorf("TryAcquire statted %d times, want 0", n)
	}
	if _, _, err := c.AcquireOutcome("nope.ts"); err == nil {
		t.Fatal("AcquireOutcome(nope.ts) = nil error, want not found")
	}
	if _, o, err, ready := c.TryAcquire("nope.ts"); !ready || err == nil || o != cache.NegativeHit {
		t.Errorf("TryAcquire(nope.ts) = %v, %v, ready %v; want negative hit, an error, ready", o, err, ready)
	}
}
