// Package ratelog lets one log line through per interval, so a flood of
// the same failure (descriptors exhausted, connection limits hit, a
// refused kTLS hand-over, a bad token) cannot flood the log. It owns no
// logger and never logs: callers ask Allow and log themselves.
package ratelog

import (
	"sync/atomic"
	"time"
)

// Limiter lets one line through per Every, by the clock Now. The zero
// value is not usable: set both fields before the first Allow.
type Limiter struct {
	Every time.Duration
	Now   func() time.Time
	last  atomic.Int64 // unix nanos of the last line let through
}

// Allow reports whether a line may be logged now; of concurrent callers
// in one interval, exactly one gets true.
func (r *Limiter) Allow() bool {
	now := r.Now().UnixNano()
	last := r.last.Load()
	if now-last < int64(r.Every) {
		return false
	}
	return r.last.CompareAndSwap(last, now)
}
