package origin

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/coldread"
	"segorigin/ranges"
)

// coldWindow is how much of a span is made resident before it is sent:
// spans are sent window by window, each checked (and if need be read by
// the pool) just before its sendfile, so a long body never waits for
// storage inside sendfile and the page cache never has to hold more of one
// response than a window ahead of the socket.
const coldWindow = 4 << 20

// coldFirstWindow is the first window of a body, made resident before its
// header is sent: smaller, so that a cold response starts sooner (the
// kernel's own read-ahead has usually brought the next window in by the
// time it is checked).
const coldFirstWindow = 256 << 10

// ColdCounters count the cold-read path: how often a span to be sent was
// resident already, and how often it had to wait for a pool reader.
type ColdCounters[C any] struct {
	Checked   [3]C // first windows checked before the header, by kind
	Resident  [3]C // of those, found resident: sent at once, by kind
	Waited    C    // windows (first or later) that waited for a pool reader
	Refused   C    // requests answered 503 + Retry-After: queue full or deadline passed
	Aborted   C    // later windows not resident in time: connection closed mid-body
	ProbeErrs C    // residency checks the kernel refused (treated as cold)
	LoadErrs  C    // pool reads that failed (the send then reports the error)
	LoadBytes C    // bytes the pool read for waiting requests
	StillCold C    // windows not resident even after the pool read them (evicted at once, or the file was replaced)
	WaitNanos C    // sum of request-side waits for the pool (queue + read)
	WaitCount C    // waits summed in WaitNanos
}

// beforeBody is the cold path's one hook into the request path: for a GET
// with a body it makes the first window of the first span resident, so
// that the response can still be refused with 503 before its header
// leaves, and tells read-ahead what was asked for (and what authorized
// it: p.g). Later windows are made resident by the body stream (sendSpan).
//
// With p.noBlock a first window that is not resident is not waited for:
// the step suspends, having counted nothing, to be run again where it may
// wait.
func (f *files) beforeBody(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	h, k := p.h, p.mt.kind
	if f.cold == nil || !ctx.IsGet() {
		return stepNext
	}
	// The pool, the read-ahead and the body stream keep the name: the
	// cache's own copy.
	name := h.Name
	sp := ranges.Span{Start: 0, Length: h.Size}
	if len(p.spans) > 0 {
		sp = p.spans[0]
	}
	if sp.Length == 0 {
		return stepNext
	}
	if h.Bytes != nil {
		// Inlined: the body is in memory, no page to wait for and no
		// residency syscall (one send per small response).
		if f.ra != nil {
			f.ra.served(ctx, name, k, h, sp, true, p.g)
		}
		return stepNext
	}
	first := ranges.Span{Start: sp.Start, Length: min(sp.Length, coldFirstWindow)}
	var resident bool
	var err error
	if p.noBlock {
		if resident, err = coldread.Resident(h.Fd(), first.Start, first.Length, h.Size); err != nil || !resident {
			return stepSuspend
		}
		f.stats.Cold.Checked[k].Add(1)
	} else {
		f.stats.Cold.Checked[k].Add(1)
		resident, err = f.cold.ensureResident(name, k, h, first)
	}
	if resident {
		f.stats.Cold.Resident[k].Add(1)
	}
	p.resident = resident
	if err != nil {
		f.stats.Cold.Refused.Add(1)
		f.resp.fail(ctx, err)
		return stepAnswered
	}
	if f.ra != nil {
		f.ra.served(ctx, name, k, h, sp, resident, p.g)
	}
	return stepNext
}

// coldPath makes the bytes a response needs resident before they are
// sent, through the cold readers (coldread.Pool), so that no sendfile
// waits for storage on a request's thread. It takes from the server only
// what it needs: the cache's Acquire, the clock and the log.
type coldPath struct {
	pool     *coldread.Pool
	st       *ColdCounters[atomic.Int64]
	now      func() time.Time
	acquire  func(name string) (*cache.Handle, error)
	log      *slog.Logger
	loggable func(string) string
	failLog  *rateLimitedLog // reads failing or refused, once per interval
}

// ensureResident returns once sp of h is in the page cache, waiting for a
// pool reader when it is not; resident says it was already. Errors are
// coldread.ErrBusy and coldread.ErrDeadline (answered 503); when the pool
// has stopped (draining) the span is sent as it is.
func (c *coldPath) ensureResident(name string, k kind, h *cache.Handle, sp ranges.Span) (resident bool, err error) {
	ok, err := coldread.Resident(h.Fd(), sp.Start, sp.Length, h.Size)
	if err != nil {
		c.st.ProbeErrs.Add(1)
	} else if ok {
		return true, nil
	}
	c.st.Waited.Add(1)
	start := c.now()
	err = c.pool.Do(coldread.Key{Name: name, Off: sp.Start}, k == kindPlaylist, func() { c.loadForRequest(name, sp) })
	c.st.WaitNanos.Add(int64(c.now().Sub(start)))
	c.st.WaitCount.Add(1)
	if errors.Is(err, coldread.ErrClosed) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if ok, _ := coldread.Resident(h.Fd(), sp.Start, sp.Length, h.Size); !ok {
		c.st.StillCold.Add(1)
	}
	return false, nil
}

// loadForRequest runs on a pool reader: it reads sp of the file the cache
// holds for name into a discard buffer. It acquires the file itself rather
// than borrowing the request's handle, because the request may stop
// waiting (deadline) and release its handle while the read goes on.
func (c *coldPath) loadForRequest(name string, sp ranges.Span) {
	n, err := c.load(name, sp)
	c.st.LoadBytes.Add(n)
	if err != nil {
		c.loadFailed(name, sp.Start, err)
	}
}

// loadFailed counts and (rate-limited) logs a cold or read-ahead read
// that failed.
func (c *coldPath) loadFailed(name string, off int64, err error) {
	c.st.LoadErrs.Add(1)
	if c.failLog.Allow() {
		c.log.Warn("cold read failed", "path", c.loggable(name), "off", off, "err", err)
	}
}

// load makes sp of name resident and returns the bytes it covered.
func (c *coldPath) load(name string, sp ranges.Span) (int64, error) {
	h, err := c.acquire(name)
	if err != nil {
		return 0, err
	}
	defer h.Release()
	n := min(sp.Length, h.Size-sp.Start)
	if n <= 0 {
		return 0, nil
	}
	return n, c.pool.Load(h.Fd(), sp.Start, n)
}

// sendSpan sends sp through w. With the cold path on it goes window by
// window, each made resident first (the first window of the first span
// was, by beforeBody, unless first is false); a window that cannot be made
// resident in time ends the response, and so the connection.
func (b *bodyStream) sendSpan(w bodyWriter, sp ranges.Span, first bool) (int64, error) {
	s := b.srv
	if s.cold == nil {
		return w.span(b.h, sp)
	}
	var sent int64
	for sp.Length > 0 {
		win := ranges.Span{Start: sp.Start, Length: min(sp.Length, coldWindow)}
		switch {
		case first && win.Length > coldFirstWindow:
			// beforeBody made the first 256 KiB resident; when the
			// whole window is (a hot file), send it in one sendfile.
			if ok, err := coldread.Resident(b.h.Fd(), win.Start, win.Length, b.h.Size); err != nil || !ok {
				win.Length = coldFirstWindow
			}
		case !first:
			if _, err := s.cold.ensureResident(b.name, b.kind, b.h, win); err != nil {
				s.stats.Cold.Aborted.Add(1)
				return sent, err
			}
		}
		first = false
		n, err := w.span(b.h, win)
		sent += n
		if err != nil {
			return sent, err
		}
		sp.Start += win.Length
		sp.Length -= win.Length
	}
	return sent, nil
}

// newColdPool builds the pool from cfg (nil when ColdReaders is 0).
func newColdPool(cfg Config) (*coldread.Pool, error) {
	if cfg.ColdReaders == 0 {
		return nil, nil
	}
	return coldread.New(coldread.Config{
		Readers:         cfg.ColdReaders,
		Background:      cfg.ReadAhead.Readers,
		Queue:           cfg.ColdQueue,
		BackgroundQueue: cfg.ReadAhead.Queue,
		Deadline:        cfg.ColdDeadline,
		Now:             cfg.Now,
		Log:             cfg.Logger,
	})
}

// poolStats returns the cold readers' counters (live), or nil when the
// cold path is off (c is nil).
func (c *coldPath) poolStats() *coldread.Stats {
	if c == nil {
		return nil
	}
	return c.pool.Stats()
}

// coldMetrics declares the cold path's metrics: the request side's
// (st) and the readers' (ps: coldread.Stats, live; nil when off).
func coldMetrics(t *table, st *ColdStats, ps *coldread.Stats) {
	if ps == nil {
		ps = new(coldread.Stats)
	}
	checked := t.counter("cold_checked_total", "Responses whose first window's residency was checked before the header, by kind.", "kind")
	t.each(checked, st.Checked[:], KindName)
	resident := t.counter("cold_resident_total", "Of those, found in the page cache (sent at once), by kind.", "kind")
	t.each(resident, st.Resident[:], KindName)
	t.one("cold_waits_total", "Windows that waited for a cold reader (cold reads).", st.Waited)
	t.addFloat(t.counter("cold_wait_seconds_total", "Time requests spent waiting for cold readers (queue and read)."), seconds(st.WaitNanos))
	t.addFloat(t.counter("cold_queue_wait_seconds_total", "Time cold reads spent queued before a reader took them."), seconds(ps.QueueWaitNanos.Load()))
	events := t.counter("cold_events_total", "Cold-read outcomes: refused (503), aborted (mid-body), probe_error, load_error, still_cold, joined.", "event")
	t.byLabel(events, map[string]int64{
		"refused": st.Refused, "aborted": st.Aborted, "probe_error": st.ProbeErrs,
		"load_error": st.LoadErrs, "still_cold": st.StillCold, "joined": ps.Joined.Load(),
	})
	t.one("cold_read_bytes_total", "Bytes the cold readers read for waiting requests.", st.LoadBytes)
	t.add(t.gauge("cold_readers_busy", "Cold readers reading now."), ps.Running.Load())
}
