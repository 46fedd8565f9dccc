package coldread

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/internal/testwait"
)

// startPool runs a pool for the test's duration.
func startPool(t *testing.T, cfg Config) *Pool {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return p
}

// waitFor is testwait.For with this package's bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 5*time.Second, what, cond)
}

func TestNewValidates(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no readers":          {Readers: 0, Deadline: time.Second},
		"background > total":  {Readers: 2, Background: 3, Deadline: time.Second},
		"negative queue":      {Readers: 1, Queue: -1, Deadline: time.Second},
		"deadline under 1 ms": {Readers: 1, Deadline: time.Microsecond},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg); err == nil {
				t.Errorf("New(%+v) = nil error, want one", cfg)
			}
		})
	}
}

func TestDoAfterRunIsClosed(t *testing.T) {
	p, err := New(Config{Readers: 1, Queue: 1, Deadline: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Run(ctx)
	if err := p.Do(Key{"a", 0}, false, func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Run = %v, want ErrClosed", err)
	}
	if err := p.Go(Key{"a", 0}, func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Go after Run = %v, want ErrClosed", err)
	}
}

func TestDoRunsAndWaits(t *testing.T) {
	p := startPool(t, Config{Readers: 2, Queue: 4, Deadline: 10 * time.Second})
	var ran atomic.Bool
	if err := p.Do(Key{"a", 0}, false, func() { ran.Store(true) }); err != nil {
		t.Fatalf("Do = %v, want nil", err)
	}
	if !ran.Load() {
		t.Error("Do returned before its job ran")
	}
	if got := p.Stats().Demand.Load(); got != 1 {
		t.Errorf("Stats.Demand = %d, want 1", got)
	}
}

// TestConcurrentDoSharesOneRead: many requests for the same cold bytes
// cause one read.
func TestConcurrentDoSharesOneRead(t *testing.T) {
	p := startPool(t, Config{Readers: 4, Queue: 4, Deadline: 10 * time.Second})
	release := make(chan struct{})
	var runs atomic.Int32
	fn := func() { runs.Add(1); <-release }
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() { errs[i] = p.Do(Key{"seg.ts", 0}, false, fn) })
	}
	waitFor(t, "nine joiners", func() bool { return p.Stats().Joined.Load() == 9 })
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Do #%d = %v, want nil", i, err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("job ran %d times, want 1", n)
	}
}

// TestFullQueueIsBusy: with every reader stalled and the queue full, the
// next request is refused at once rather than queued without bound.
func TestFullQueueIsBusy(t *testing.T) {
	p := startPool(t, Config{Readers: 1, Queue: 1, Deadline: 10 * time.Second})
	release := make(chan struct{})
	defer close(release)
	stall := func() { <-release }
	go p.Do(Key{"a", 0}, false, stall)
	waitFor(t, "reader busy", func() bool { return p.Stats().Running.Load() == 1 })
	go p.Do(Key{"b", 0}, false, stall)
	waitFor(t, "queue full", func() bool { return len(p.demand) == 1 })
	if err := p.Do(Key{"c", 0}, false, stall); !errors.Is(err, ErrBusy) {
		t.Errorf("Do with a full queue = %v, want ErrBusy", err)
	}
	if got := p.Stats().Busy.Load(); got != 1 {
		t.Errorf("Stats.Busy = %d, want 1", got)
	}
}

func TestDeadline(t *testing.T) {
	p := startPool(t, Config{Readers: 1, Queue: 1, Deadline: time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	if err := p.Do(Key{"a", 0}, false, func() { <-release }); !errors.Is(err, ErrDeadline) {
		t.Errorf("Do of a stalled job = %v, want ErrDeadline", err)
	}
	if got := p.Stats().Deadline.Load(); got != 1 {
		t.Errorf("Stats.Deadline = %d, want 1", got)
	}
}

// TestBackgroundNeverTakesEveryReader: read-ahead stalled on every reader
// it may use still leaves a reader for demand.
func TestBackgroundNeverTakesEveryReader(t *testing.T) {
	p := startPool(t, Config{Readers: 2, Background: 1, Queue: 2, BackgroundQueue: 4, Deadline: 10 * time.Second})
	release := make(chan struct{})
	defer close(release)
	for i := range 3 {
		if err := p.Go(Key{"bg", int64(i)}, func() { <-release }); err != nil {
			t.Fatalf("Go #%d = %v, want queued", i, err)
		}
	}
	waitFor(t, "background reader busy", func() bool { return p.Stats().Running.Load() == 1 })
	if err := p.Do(Key{"demand", 0}, false, func() {}); err != nil {
		t.Errorf("Do while background work stalls = %v, want nil", err)
	}
	if got := p.Stats().Background.Load(); got != 1 {
		t.Errorf("Stats.Background = %d, want 1 (only one reader may take background work)", got)
	}
}

func TestBackgroundDrops(t *testing.T) {
	p := startPool(t, Config{Readers: 1, Background: 1, Queue: 1, BackgroundQueue: 1, Deadline: time.Second})
	release := make(chan struct{})
	defer close(release)
	p.Go(Key{"a", 0}, func() { <-release })
	waitFor(t, "background running", func() bool { return p.Stats().Running.Load() == 1 })
	if err := p.Go(Key{"b", 0}, func() {}); err != nil {
		t.Fatalf("Go with room in the queue = %v, want nil", err)
	}
	if err := p.Go(Key{"b", 0}, func() {}); !errors.Is(err, ErrQueued) {
		t.Errorf("Go of a key already queued = %v, want ErrQueued", err)
	}
	if err := p.Go(Key{"c", 0}, func() {}); !errors.Is(err, ErrBusy) {
		t.Errorf("Go with the queue full = %v, want ErrBusy", err)
	}
	if got := p.Stats().Dropped.Load(); got != 1 {
		t.Errorf("Stats.Dropped = %d, want 1", got)
	}
	off, err := New(Config{Readers: 1, Queue: 1, Deadline: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := off.Go(Key{"a", 0}, func() {}); !errors.Is(err, ErrBusy) {
		t.Errorf("Go with Background 0 = %v, want ErrBusy", err)
	}
}

// TestUrgentHasAReader: with every other reader stalled on demand, an
// urgent job (a playlist) still runs.
func TestUrgentHasAReader(t *testing.T) {
	p := startPool(t, Config{Readers: 2, Queue: 4, Deadline: 10 * time.Second})
	release := make(chan struct{})
	defer close(release)
	for i := range 3 {
		go p.Do(Key{"seg", int64(i)}, false, func() { <-release })
	}
	waitFor(t, "demand queued behind a stalled reader", func() bool { return len(p.demand) == 2 })
	if err := p.Do(Key{"index.m3u8", 0}, true, func() {}); err != nil {
		t.Errorf("urgent Do with demand stalled = %v, want nil", err)
	}
}
