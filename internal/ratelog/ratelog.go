// Package ratelog lets one log line through per interval, so a flood of
// the same failure (descriptors exhausted, connection limits hit, a
// refused kTLS hand-over, a bad token) cannot flood the log. It owns no
// logger and never logs: callers ask Allow and log themselves. What it
// holds back is counted, so the next line can say how many it stands for
// (Suppressed) and an exporter can publish the total (Dropped).
package ratelog

import (
	"sync/atomic"
	"time"
)

// Limiter lets one line through per Every, by the clock Now. The zero
// value is not usable: set both fields before the first Allow.
type Limiter struct {
	Every    time.Duration
	Now      func() time.Time
	last     atomic.Int64 // unix nanos of the last line let through
	dropped  atomic.Int64 // lines held back, ever
	reported atomic.Int64 // dropped as of the last Suppressed call
}

// Allow reports whether a line may be logged now; of concurrent callers
// in one interval, exactly one gets true. Every false is counted.
func (r *Limiter) Allow() bool {
	now := r.Now().UnixNano()
	last := r.last.Load()
	if now-last < int64(r.Every) || !r.last.CompareAndSwap(last, now) {
		r.dropped.Add(1)
		return false
	}
	return true
}

// Suppressed returns the lines held back since its previous call: the
// caller that Allow let through logs it with its line.
func (r *Limiter) Suppressed() int64 {
	d := r.dropped.Load()
	return d - r.reported.Swap(d)
}

// Dropped returns the lines held back since the Limiter was made.
func (r *Limiter) Dropped() int64 { return r.dropped.Load() }

// Inherit carries old's counts into r, which replaces it (a configuration
// reload), so that Dropped, a counter, never goes down. Lines old holds
// back while Inherit runs may be missed.
func (r *Limiter) Inherit(old *Limiter) {
	r.reported.Store(old.reported.Load())
	r.dropped.Add(old.dropped.Load())
}
