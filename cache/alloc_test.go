package cache_test

import (
	"testing"
	"time"
)

func TestHitAllocatesNothing(t *testing.T) {
	f := newFixture(t, map[string]string{"a.ts": "a"})
	c := newCache(t, f.config(4))
	acquire(t, c, "a.ts").Release()
	missing(t, c, "gone.ts")

	if n := testing.AllocsPerRun(1000, func() {
		h, err := c.Acquire("a.ts")
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
	}); n != 0 {
		t.Errorf("Acquire+Release hit: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := c.Acquire("gone.ts"); err == nil {
			t.Fatal("Acquire(gone.ts) succeeded")
		}
	}); n != 0 {
		t.Errorf("negative hit: %v allocations, want 0", n)
	}
}

func TestRevalidatedHitAllocationBudget(t *testing.T) {
	f := newFixture(t, map[string]string{"a.ts": "a"})
	cfg := f.config(4)
	cfg.Revalidate = time.Hour
	c := newCache(t, cfg)
	acquire(t, c, "a.ts").Release()
	// Inside the period a revalidating cache hits like any other.
	if n := testing.AllocsPerRun(1000, func() {
		h, _ := c.Acquire("a.ts")
		h.Release()
	}); n != 0 {
		t.Errorf("hit inside the revalidation period: %v allocations, want 0", n)
	}
}
