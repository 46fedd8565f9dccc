package coldread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBusy: the demand queue is full. The caller should answer 503 with
// Retry-After rather than wait.
var ErrBusy = errors.New("coldread: reader queue full")

// ErrDeadline: the job did not finish within Config.Deadline. It still
// runs; only this caller stopped waiting.
var ErrDeadline = errors.New("coldread: read not done before the deadline")

// ErrQueued: a background job for the key is queued or running already.
var ErrQueued = errors.New("coldread: already queued")

// ErrClosed: Run has returned; the pool runs nothing more.
var ErrClosed = errors.New("coldread: pool not running")

// Key names one read, so concurrent requests for the same bytes share it.
type Key struct {
	Name string // the file's cache key
	Off  int64  // first byte of the range
}

// Config sizes a Pool.
type Config struct {
	// Readers is how many goroutines may block on storage at once: the OS
	// threads cold reads can hold. At least 1.
	Readers int
	// Background is how many of the Readers run background work
	// (read-ahead), before demand when both wait; the other Readers only
	// ever serve demand, so read-ahead cannot starve a waiting request. 0 disables background
	// work; at most Readers.
	Background int
	// Queue bounds demand jobs waiting for a reader (beyond it: ErrBusy).
	Queue int
	// BackgroundQueue bounds background jobs waiting (beyond it they are
	// dropped and counted).
	BackgroundQueue int
	// Deadline bounds how long Do waits for its job. At least 1ms.
	Deadline time.Duration
	// Now is the clock for queue-wait accounting; nil uses time.Now.
	Now func() time.Time
	// Log says when Run cannot open /dev/null (its loads then read with
	// pread); nil uses slog.Default.
	Log *slog.Logger
}

// Stats are the pool's counters.
type Stats struct {
	Demand         atomic.Int64 // demand jobs run (cold reads)
	Joined         atomic.Int64 // Do calls that waited on a job another caller queued
	Busy           atomic.Int64 // Do calls refused: queue full
	Deadline       atomic.Int64 // Do calls that stopped waiting at the deadline
	Background     atomic.Int64 // background jobs run
	Dropped        atomic.Int64 // background jobs dropped: queue full (or background work off)
	QueueWaitNanos atomic.Int64 // sum over demand jobs of enqueue-to-start time
	Running        atomic.Int64 // jobs running now
}

type job struct {
	key  Key
	fn   func()
	enq  time.Time
	done chan struct{} // closed when fn returned (demand jobs only)
}

// Pool runs blocking reads on a fixed set of goroutines. Create it with
// New, start its readers with Run.
type Pool struct {
	cfg    Config
	urgent chan *job // bounded by cfg.Queue: demand that goes first (playlists)
	demand chan *job // bounded by cfg.Queue
	bg     chan *job // bounded by cfg.BackgroundQueue
	stats  Stats

	mu       sync.Mutex   // protects inflight, bgKeys, stopped
	inflight map[Key]*job // demand jobs queued or running, for joining
	bgKeys   map[Key]*job // background jobs queued or running, for deduplication
	stopped  bool         // Run has returned: nothing queued will run

	// null is /dev/null, open while Run runs, for Load's sendfile (-1:
	// it could not be opened, and Load reads instead).
	null int
}

// New validates cfg. It starts no goroutine: Run does.
func New(cfg Config) (*Pool, error) {
	var errs []error
	if cfg.Readers < 1 {
		errs = append(errs, fmt.Errorf("readers: %d, want >= 1", cfg.Readers))
	}
	if cfg.Background < 0 || cfg.Background > cfg.Readers {
		errs = append(errs, fmt.Errorf("background readers: %d, want 0..%d (readers)", cfg.Background, cfg.Readers))
	}
	if cfg.Queue < 0 || cfg.BackgroundQueue < 0 {
		errs = append(errs, fmt.Errorf("queue %d, background queue %d: want >= 0", cfg.Queue, cfg.BackgroundQueue))
	}
	if cfg.Deadline < time.Millisecond {
		errs = append(errs, fmt.Errorf("deadline: %v, want >= 1ms", cfg.Deadline))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("coldread: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Pool{
		null:     -1,
		cfg:      cfg,
		urgent:   make(chan *job, cfg.Queue),
		demand:   make(chan *job, cfg.Queue),
		bg:       make(chan *job, cfg.BackgroundQueue),
		inflight: map[Key]*job{},
		bgKeys:   map[Key]*job{},
	}, nil
}

// Stats returns the pool's counters (live).
func (p *Pool) Stats() *Stats { return &p.stats }

// Config returns the configuration the pool runs with.
func (p *Pool) Config() Config { return p.cfg }

// Run serves jobs on cfg.Readers goroutines until ctx is done, then waits
// for the jobs running to return. Jobs are accepted from New on (they wait
// for Run); jobs still queued when Run returns are not run: their callers
// see ErrDeadline, and later calls ErrClosed.
func (p *Pool) Run(ctx context.Context) {
	// One descriptor for every Load while the readers run, rather than
	// an open and a close a load.
	var err error
	if p.null, err = openNull(); err != nil {
		p.cfg.Log.Warn("cold reads go through a buffer: no /dev/null to sendfile to", "err", err)
	}
	defer func() {
		if err := closeNull(p.null); err != nil {
			p.cfg.Log.Error("closing /dev/null", "err", err)
		}
		p.null = -1
	}()
	var wg sync.WaitGroup
	for i := range p.cfg.Readers {
		mixed := i < p.cfg.Background
		// With two readers or more that background work may not take,
		// the last serves urgent jobs only, so a playlist never waits
		// behind a burst of cold segments and demand keeps a reader.
		urgentOnly := i == p.cfg.Readers-1 && p.cfg.Readers-p.cfg.Background >= 2
		wg.Go(func() { p.reader(ctx, mixed, urgentOnly) })
	}
	wg.Wait()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// Load makes [off, off+n) of fd resident (see load): for a job the pool
// runs, which alone may block on storage.
func (p *Pool) Load(fd int, off, n int64) error { return load(p.null, fd, off, n) }

// reader runs jobs until ctx is done: urgent first, then demand. A mixed
// reader takes background work before demand: read-ahead keeps its
// readers through a burst of cold requests (which is when it matters),
// and demand keeps the Readers-Background readers that never take it.
func (p *Pool) reader(ctx context.Context, mixed, urgentOnly bool) {
	bg, demand := p.bg, p.demand
	if !mixed {
		bg = nil // a nil channel is never ready
	}
	if urgentOnly {
		demand = nil
	}
	for {
		select {
		case j := <-bg:
			p.runBackground(j)
			continue
		default:
		}
		select {
		case j := <-p.urgent:
			p.runDemand(j)
			continue
		case <-ctx.Done():
			return
		default:
		}
		select {
		case j := <-p.urgent:
			p.runDemand(j)
			continue
		case j := <-demand:
			p.runDemand(j)
			continue
		case <-ctx.Done():
			return
		default:
		}
		select {
		case j := <-p.urgent:
			p.runDemand(j)
		case j := <-demand:
			p.runDemand(j)
		case j := <-bg:
			p.runBackground(j)
		case <-ctx.Done():
			return
		}
	}
}

func (p *Pool) runDemand(j *job) {
	p.stats.QueueWaitNanos.Add(int64(p.cfg.Now().Sub(j.enq)))
	p.run(j, p.inflight, &p.stats.Demand)
}

func (p *Pool) runBackground(j *job) { p.run(j, p.bgKeys, &p.stats.Background) }

// run runs j, then unlists it from listed and wakes its waiters.
func (p *Pool) run(j *job, listed map[Key]*job, ran *atomic.Int64) {
	ran.Add(1)
	p.stats.Running.Add(1)
	j.fn()
	p.stats.Running.Add(-1)
	p.mu.Lock()
	delete(listed, j.key)
	p.mu.Unlock()
	if j.done != nil {
		close(j.done)
	}
}

// Do runs fn on a reader and waits for it, at most cfg.Deadline. If a job
// for key is already queued or running, Do waits for that one instead and
// fn is not run. An urgent job goes before every other, and has a reader
// of its own when two or more readers never take background work. fn must
// not call the pool.
func (p *Pool) Do(key Key, urgent bool, fn func()) error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return ErrClosed
	}
	j, joined := p.inflight[key]
	if !joined {
		j = &job{key: key, fn: fn, enq: p.cfg.Now(), done: make(chan struct{})}
		q := p.demand
		if urgent {
			q = p.urgent
		}
		select {
		case q <- j:
			p.inflight[key] = j
		default:
			p.mu.Unlock()
			p.stats.Busy.Add(1)
			return ErrBusy
		}
	}
	p.mu.Unlock()
	if joined {
		p.stats.Joined.Add(1)
	}
	t := time.NewTimer(p.cfg.Deadline)
	defer t.Stop()
	select {
	case <-j.done:
		return nil
	case <-t.C:
		p.stats.Deadline.Add(1)
		return ErrDeadline
	}
}

// Go queues fn as background work and returns at once: nil when queued,
// ErrQueued when a job for key is queued or running already, ErrBusy
// (counted as a drop) when background work is off or its queue is full,
// ErrClosed after Run returned.
func (p *Pool) Go(key Key, fn func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return ErrClosed
	case p.bgKeys[key] != nil:
		return ErrQueued
	case p.cfg.Background == 0:
		p.stats.Dropped.Add(1)
		return ErrBusy
	}
	j := &job{key: key, fn: fn}
	select {
	case p.bg <- j:
		p.bgKeys[key] = j
		return nil
	default:
		p.stats.Dropped.Add(1)
		return ErrBusy
	}
}
