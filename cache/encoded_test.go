package cache_test

import (
	"testing"

	"segorigin/cache"
)

// TestEncodedKeptPerVersion: an encoding set on a Handle is what every
// later holder of the same entry sees, counts against the inline budget
// while the descriptor lives, and goes with it: the next version starts
// without one.
func TestEncodedKeptPerVersion(t *testing.T) {
	f := newFixture(t, map[string]string{"p.m3u8": "#EXTM3U\n"})
	c := newCache(t, inlineConfig(f, 4, 1024, 1<<20))
	h := acquire(t, c, "p.m3u8")
	before := c.Stats().InlineBytes
	if !h.SetEncoded(&cache.Encoded{Bytes: []byte("gzbytes")}) {
		t.Fatal("SetEncoded on a fresh Handle = false, want true")
	}
	if h.SetEncoded(&cache.Encoded{Bytes: []byte("other")}) {
		t.Error("a second SetEncoded = true, want false (the first stays)")
	}
	h.Release()
	if got, want := c.Stats().InlineBytes, before+7; got != want {
		t.Errorf("InlineBytes with an encoding kept = %d, want %d", got, want)
	}
	h2 := acquire(t, c, "p.m3u8")
	if e := h2.Encoded(); e == nil || string(e.Bytes) != "gzbytes" {
		t.Errorf("Encoded() on the next hit = %v, want the first one set", e)
	}
	h2.Release()
	c.Invalidate("p.m3u8")
	if got := c.Stats().InlineBytes; got != 0 {
		t.Errorf("InlineBytes after the entry closed = %d, want 0", got)
	}
	h3 := acquire(t, c, "p.m3u8")
	defer h3.Release()
	if e := h3.Encoded(); e != nil {
		t.Errorf("Encoded() of a fresh open = %v, want nil", e)
	}
}

// TestEncodedOverBudget: an encoding that would pass InlineBudget is not
// kept.
func TestEncodedOverBudget(t *testing.T) {
	f := newFixture(t, map[string]string{"p.m3u8": "#EXTM3U\n"})
	c := newCache(t, inlineConfig(f, 4, 1024, 10))
	h := acquire(t, c, "p.m3u8")
	defer h.Release()
	if h.SetEncoded(&cache.Encoded{Bytes: make([]byte, 8)}) {
		t.Error("SetEncoded of 8 bytes beside 8 inlined within a budget of 10 = true, want false")
	}
	if h.Encoded() != nil {
		t.Error("Encoded() after a refused SetEncoded is not nil")
	}
}
