package cache_test

import (
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/cache"
	"segorigin/internal/testwait"
)

// gate blocks the first Open until opened, and tells when it started.
type gate struct {
	calls   atomic.Int64
	started chan struct{} // closed when the first Open is blocked
	release chan struct{} // close to let it continue
	err     error         // returned by the first Open instead of opening, if set
}

func newGate() *gate {
	return &gate{started: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) hook(string) error {
	if g.calls.Add(1) == 1 {
		close(g.started)
		<-g.release
		return g.err
	}
	return nil
}

// waitFor is testwait.For with this package's bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 5*time.Second, what, cond)
}

func TestConcurrentMissesOpenOnce(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "shared"})
	g := newGate()
	f.openHook = g.hook
	c := newCache(t, f.config(4))

	const callers = 8
	handles := make([]*cache.Handle, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			h, err := c.Acquire("a")
			if err != nil {
				t.Errorf("Acquire: %v", err)
				return
			}
			handles[i] = h
		})
	}
	<-g.started
	waitFor(t, "all callers to miss", func() bool { return c.Stats().Misses == callers })
	close(g.release)
	wg.Wait()

	wantStat(t, "Open calls", f.opens.Load(), 1)
	for i, h := range handles {
		if h != handles[0] {
			t.Errorf("caller %d got a different Handle", i)
		}
		if got := content(t, h); got != "shared" {
			t.Errorf("caller %d reads %q, want %q", i, got, "shared")
		}
		h.Release()
	}
	// Every waiter's reference is returned; the cache's keeps it open.
	wantStat(t, "OpenFiles", c.Stats().OpenFiles, 1)
	acquire(t, c, "a").Release()
	wantStat(t, "Open calls after", f.opens.Load(), 1)
}

func TestInvalidateDuringOpenIsNotCached(t *testing.T) {
	for _, tt := range []struct {
		name       string
		invalidate func(c *cache.Cache)
	}{
		{"Invalidate", func(c *cache.Cache) { c.Invalidate("d/a") }},
		{"InvalidatePrefix", func(c *cache.Cache) { c.InvalidatePrefix("d") }},
		{"InvalidateAll", func(c *cache.Cache) { c.InvalidateAll() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"d/a": "old"})
			g := newGate()
			f.afterOpen = func(name string) { g.hook(name) } // block with the old inode open
			c := newCache(t, f.config(4))

			done := make(chan *cache.Handle)
			go func() {
				h, err := c.Acquire("d/a")
				if err != nil {
					t.Errorf("Acquire: %v", err)
				}
				done <- h
			}()
			<-g.started // the first open is under way
			f.replace("d/a", "new", time.Time{})
			tt.invalidate(c)

			// A caller after the invalidation must not join the old open
			// (if it did, it would wait for g.release: bound the wait).
			h2c := make(chan *cache.Handle, 1)
			go func() {
				h, err := c.Acquire("d/a")
				if err != nil {
					t.Errorf("Acquire after invalidation: %v", err)
				}
				h2c <- h
			}()
			var h2 *cache.Handle
			select {
			case h2 = <-h2c:
			case <-time.After(5 * time.Second):
				close(g.release)
				<-done
				t.Fatalf("Acquire after invalidation joined the open under way")
			}
			if h2 == nil {
				return
			}
			if got := content(t, h2); got != "new" {
				t.Errorf("Acquire after invalidation reads %q, want %q", got, "new")
			}
			h2.Release()

			close(g.release)
			h := <-done
			if h == nil {
				return
			}
			if got := content(t, h); got != "old" {
				t.Errorf("the spoiled open reads %q, want the whole old file %q", got, "old")
			}
			h.Release()
			h3 := acquire(t, c, "d/a")
			defer h3.Release()
			if got := content(t, h3); got != "new" {
				t.Errorf("the open spoiled by the invalidation was cached: reads %q, want %q", got, "new")
			}
			wantStat(t, "OpenFiles", c.Stats().OpenFiles, 1)
		})
	}
}

func TestInvalidateDuringOpenForgetsNotExist(t *testing.T) {
	f := newFixture(t, nil)
	g := newGate()
	g.err = &fs.PathError{Op: "open", Path: "a", Err: fs.ErrNotExist}
	f.openHook = g.hook
	c := newCache(t, f.config(4))

	errc := make(chan error)
	go func() {
		_, err := c.Acquire("a")
		errc <- err
	}()
	<-g.started
	f.write("a", "created")
	c.Invalidate("a")
	close(g.release)
	if err := <-errc; !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the spoiled open = %v, want its own fs.ErrNotExist", err)
	}
	h := acquire(t, c, "a")
	defer h.Release()
	if got := content(t, h); got != "created" {
		t.Errorf("content = %q, want %q", got, "created")
	}
}

// TestWaitTimeoutLeavesTheOpen: a caller waiting for another's open gives
// up after WaitTimeout with ErrWaitTimeout and takes no reference; the
// opener, and a caller still waiting, get the file when the open returns,
// and the references add up (the descriptor closes with the last one).
func TestWaitTimeoutLeavesTheOpen(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "slow"})
	g := newGate()
	f.openHook = g.hook
	cfg := f.config(4)
	cfg.WaitTimeout = time.Millisecond
	c := newCache(t, cfg)

	opened := make(chan *cache.Handle, 1)
	go func() {
		h, err := c.Acquire("a")
		if err != nil {
			t.Errorf("opener: Acquire: %v", err)
		}
		opened <- h
	}()
	<-g.started
	for range 3 {
		if h, err := c.Acquire("a"); !errors.Is(err, cache.ErrWaitTimeout) || h != nil {
			t.Fatalf("Acquire while the open hangs = %v, %v; want nil, ErrWaitTimeout", h, err)
		}
	}
	close(g.release)
	h := <-opened
	if got := content(t, h); got != "slow" {
		t.Errorf("opener reads %q, want %q", got, "slow")
	}
	h.Release()
	wantStat(t, "OpenFiles (the cache's reference only)", c.Stats().OpenFiles, 1)
	c.Invalidate("a")
	wantStat(t, "OpenFiles after invalidation", c.Stats().OpenFiles, 0)
}

// TestSpoiledOpenReachingPathLateLeavesNothingOlder: an open spoiled by an
// invalidation before it reached the path, which then opens a version
// newer than the one a later open got (the file replaced again, its event
// not yet in), must not leave that later open's older file for its caller
// to get next: a client would go back in time (TestInlineRenameReplace in
// origin saw it under load).
func TestSpoiledOpenReachingPathLateLeavesNothingOlder(t *testing.T) {
	for _, tt := range []struct {
		name     string
		inFlight bool // the later open is still under way when the spoiled one ends
	}{
		{"later open listed", false},
		{"later open in flight", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"p.m3u8": "v1"})
			first, second := newGate(), newGate()
			var opens atomic.Int64
			f.openHook = func(name string) error {
				if opens.Add(1) == 1 {
					return first.hook(name) // G1 registered, not yet at the path
				}
				return nil
			}
			f.afterOpen = func(name string) {
				if tt.inFlight {
					second.hook(name) // the first open past the path is G2's: it holds v1, not yet listed
				}
			}
			c := newCache(t, f.config(4))

			g1 := goAcquire(t, c, "p.m3u8")
			<-first.started
			c.Invalidate("p.m3u8") // v1's own event, late: spoils G1
			g2 := goAcquire(t, c, "p.m3u8")
			if tt.inFlight {
				<-second.started
			} else {
				h := <-g2
				wantContent(t, h, "G2", "v1")
			}
			f.replace("p.m3u8", "v2", time.Time{}) // its event not yet in
			close(first.release)
			wantContent(t, <-g1, "G1, spoiled", "v2")
			if tt.inFlight {
				close(second.release)
				wantContent(t, <-g2, "G2", "v1")
			}
			// G1's caller asks again: nothing older than v2 may answer.
			wantContent(t, acquire(t, c, "p.m3u8"), "the next Acquire", "v2")
		})
	}
}

// goAcquire runs Acquire(name) on a goroutine; the channel has its Handle
// (nil on error, which fails the test).
func goAcquire(t *testing.T, c *cache.Cache, name string) <-chan *cache.Handle {
	done := make(chan *cache.Handle, 1)
	go func() {
		h, err := c.Acquire(name)
		if err != nil {
			t.Errorf("Acquire(%q): %v", name, err)
		}
		done <- h
	}()
	return done
}

// wantContent checks h's content and releases it.
func wantContent(t *testing.T, h *cache.Handle, what, want string) {
	t.Helper()
	if h == nil {
		t.Fatalf("%s: no Handle", what)
	}
	defer h.Release()
	if got := content(t, h); got != want {
		t.Errorf("%s reads %q, want %q", what, got, want)
	}
}
