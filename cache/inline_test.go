package cache_test

import (
	"testing"
	"time"
	"unsafe"

	"segorigin/cache"
)

// inlineConfig is f.config with inlining of files up to max bytes within
// budget.
func inlineConfig(f *fixture, files int, max, budget int64) cache.Config {
	cfg := f.config(files)
	cfg.InlineMax, cfg.InlineBudget = max, budget
	return cfg
}

func TestInlineThreshold(t *testing.T) {
	tests := []struct {
		name    string
		content string
		max     int64
		want    bool // Bytes set
	}{
		{"below the threshold", "0123456789", 16, true},
		{"at the threshold", "0123456789", 10, true},
		{"over the threshold", "0123456789", 9, false},
		{"empty file", "", 16, false},
		{"inlining off", "0123456789", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"p.m3u8": tt.content})
			c := newCache(t, inlineConfig(f, 4, tt.max, 1<<20))
			h := acquire(t, c, "p.m3u8")
			defer h.Release()
			if got := h.Bytes != nil; got != tt.want {
				t.Fatalf("Acquire(p.m3u8) of %d bytes with InlineMax %d: inlined %v, want %v", len(tt.content), tt.max, got, tt.want)
			}
			if tt.want && string(h.Bytes) != tt.content {
				t.Errorf("Bytes = %q, want %q", h.Bytes, tt.content)
			}
			if tt.want && content(t, h) != tt.content {
				t.Errorf("descriptor reads %q, want %q (Bytes and fd must agree)", content(t, h), tt.content)
			}
		})
	}
}

// TestInlineReadOnce: hits hand out the bytes read at open; no open, stat or
// read per request.
func TestInlineReadOnce(t *testing.T) {
	f := newFixture(t, map[string]string{"p.m3u8": "#EXTM3U\n"})
	c := newCache(t, inlineConfig(f, 4, 1024, 1<<20))
	first := acquire(t, c, "p.m3u8")
	first.Release()
	for range 10 {
		h := acquire(t, c, "p.m3u8")
		if &h.Bytes[0] != &first.Bytes[0] {
			t.Fatalf("hit returned other bytes: the file was read again")
		}
		h.Release()
	}
	wantStat(t, "Open calls", f.opens.Load(), 1)
	if s := c.Stats(); s.InlineFiles != 1 || s.InlineBytes != 8 {
		t.Errorf("Stats() InlineFiles %d InlineBytes %d, want 1 and 8", s.InlineFiles, s.InlineBytes)
	}
}

// TestInlineBudget: a file that would pass the budget is served by its
// descriptor; bytes come back to the budget when the last reference to a
// dropped entry goes, not before.
func TestInlineBudget(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "aaaaaa", "b": "bbbbbb", "c": "cccccc"})
	c := newCache(t, inlineConfig(f, 4, 100, 12))
	a, b := acquire(t, c, "a"), acquire(t, c, "b")
	cc := acquire(t, c, "c")
	if a.Bytes == nil || b.Bytes == nil {
		t.Fatalf("a and b (12 bytes) not inlined within a 12-byte budget")
	}
	if cc.Bytes != nil {
		t.Fatalf("c inlined past the budget: InlineBytes %d", c.Stats().InlineBytes)
	}
	if got := c.Stats().InlineOverBudget; got != 1 {
		t.Errorf("InlineOverBudget = %d, want 1", got)
	}
	cc.Release()

	c.Invalidate("a") // unlisted, but a is still lent out
	if got := c.Stats().InlineBytes; got != 12 {
		t.Errorf("InlineBytes with a unlisted but lent out = %d, want 12", got)
	}
	a.Release()
	if got := c.Stats().InlineBytes; got != 6 {
		t.Errorf("InlineBytes after a's last release = %d, want 6", got)
	}
	c.Invalidate("c")
	cc = acquire(t, c, "c")
	if cc.Bytes == nil {
		t.Errorf("c not inlined after a gave its bytes back")
	}
	cc.Release()
	b.Release()
}

// TestInlineDroppedWithDescriptor: every way an entry loses its descriptor
// loses its bytes, and the next Acquire reads the file as it is now.
func TestInlineDroppedWithDescriptor(t *testing.T) {
	tests := []struct {
		name  string
		drop  func(f *fixture, c *cache.Cache)
		extra int64 // inline bytes of other entries still listed
	}{
		{"invalidation (watcher event)", func(_ *fixture, c *cache.Cache) { c.Invalidate("p.m3u8") }, 0},
		{"prefix invalidation", func(_ *fixture, c *cache.Cache) { c.InvalidatePrefix("") }, 0},
		{"shedding (EMFILE)", func(_ *fixture, c *cache.Cache) { c.Shed() }, 0},
		{"eviction", func(f *fixture, c *cache.Cache) {
			for _, n := range []string{"x1", "x2"} {
				f.write(n, n)
				acquire(f.t.(*testing.T), c, n).Release()
			}
		}, 2},
		{"stat revalidation", func(f *fixture, _ *cache.Cache) { f.advance(time.Second) }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"p.m3u8": "#EXTM3U\n#1\n"})
			cfg := inlineConfig(f, 2, 1024, 1<<20)
			cfg.Revalidate = time.Second
			c := newCache(t, cfg)
			acquire(t, c, "p.m3u8").Release()
			f.write("p.m3u8", "#EXTM3U\n#2 longer\n") // in place: same inode
			tt.drop(f, c)
			h := acquire(t, c, "p.m3u8")
			defer h.Release()
			if got := string(h.Bytes); got != "#EXTM3U\n#2 longer\n" {
				t.Errorf("after %s, Bytes = %q, want the rewritten file", tt.name, got)
			}
			if want := int64(len(h.Bytes)) + tt.extra; c.Stats().InlineBytes != want {
				t.Errorf("InlineBytes = %d, want %d (only the live entry)", c.Stats().InlineBytes, want)
			}
		})
	}
}

func TestInlineConfigRefused(t *testing.T) {
	f := newFixture(t, nil)
	for _, cfg := range []cache.Config{inlineConfig(f, 4, -1, 10), inlineConfig(f, 4, 10, -1)} {
		if _, err := cache.New(cfg); err == nil {
			t.Errorf("New(InlineMax %d, InlineBudget %d) = nil error, want one", cfg.InlineMax, cfg.InlineBudget)
		}
	}
}

// TestAcquireCopiesName: the name passed to Acquire may live in a buffer
// the caller reuses (the server's pooled path buffer); what the cache keeps
// must not change with it.
func TestAcquireCopiesName(t *testing.T) {
	f := newFixture(t, map[string]string{"a.ts": "a"})
	c := newCache(t, f.config(4))
	buf := []byte("a.ts")
	acquire(t, c, unsafe.String(&buf[0], len(buf))).Release()
	copy(buf, "zzzz")
	acquire(t, c, "a.ts").Release()
	wantStat(t, "Open calls after the caller reused its buffer", f.opens.Load(), 1)
}
