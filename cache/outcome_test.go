package cache_test

import (
	"testing"

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
