package publish

import (
	"sync"
	"sync/atomic"
	"time"
)

// File is what the rule needs to know of one version of a file: what one
// fstat says.
// Its size is not part of it: an empty file is a valid resource (an empty
// subtitle segment, a placeholder), and one being created is caught by its
// dates and the watcher like any other write.
type File struct {
	ModTime int64 // st_mtime, Unix nanoseconds
	Ctime   int64 // st_ctime, Unix nanoseconds
}

// Rule is the settle rule.
type Rule struct {
	// Settle is how long after its last write a file counts as complete.
	// 0: only the watcher's events apply.
	Settle time.Duration
}

// InProgress reports whether f, as of now (Unix nanoseconds), may still be
// being written; seen is the Unix nanoseconds of the last write the
// watcher saw at its name (0: none).
func (r Rule) InProgress(f File, seen, now int64) bool {
	settle := int64(r.Settle)
	if seen != 0 && within(seen, now, settle) {
		return true
	}
	if settle <= 0 {
		return false
	}
	// An mtime in the future is anyone's choice (touch -d, a restored
	// archive): it says nothing of a write now, and the ctime that setting
	// it moved does. A ctime in the future is the kernel's own clock (a
	// network file system's server ahead of this one): a write may be
	// going on.
	return f.ModTime <= now && within(f.ModTime, now, settle) || within(f.Ctime, now, settle)
}

// within reports whether t is less than settle before now, or after now.
// A gap too wide for an int64 (a date at the far past) overflows to a
// negative difference: that is settled too.
func within(t, now, settle int64) bool {
	if t > now {
		return true
	}
	d := now - t
	return d >= 0 && d < settle
}

// maxWrites bounds the names Writes remembers. Past it the oldest half
// goes: those names then fall back to their own dates (the settle rule
// without the watcher), which a burst of that many writes within one
// settle period makes the better witness anyway.
const maxWrites = 1 << 16

// Writes remembers when the watcher last saw each name written. Safe for
// concurrent use. Its zero value is ready.
type Writes struct {
	n         atomic.Int32     // len(m), read without the lock by Seen's fast path
	mu        sync.RWMutex     // protects m, lastPrune
	m         map[string]int64 // name -> Unix nanoseconds of the last write seen
	lastPrune int64            // when Note last forgot settled names
}

// Note records a write of name at now and forgets the names written more
// than settle before now.
func (w *Writes) Note(name string, now int64, settle time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[string]int64)
	}
	if len(w.m) >= maxWrites || now-w.lastPrune >= int64(settle) {
		w.pruneLocked(now, settle)
		w.lastPrune = now
	}
	if len(w.m) >= maxWrites {
		w.dropOldestLocked()
	}
	w.m[name] = now
	w.n.Store(int32(len(w.m)))
}

// Seen returns when name was last seen written, if that was less than
// settle before now (0 otherwise: not lately). With nothing remembered it
// takes no lock; a name found settled is forgotten, so that once writes
// stop the fast path returns.
func (w *Writes) Seen(name string, now int64, settle time.Duration) int64 {
	if w.n.Load() == 0 {
		return 0
	}
	w.mu.RLock()
	t, ok := w.m[name]
	w.mu.RUnlock()
	if !ok || now-t < int64(settle) {
		return t
	}
	w.mu.Lock()
	if w.m[name] == t {
		delete(w.m, name)
		w.n.Store(int32(len(w.m)))
	}
	w.mu.Unlock()
	return 0
}

func (w *Writes) pruneLocked(now int64, settle time.Duration) {
	for name, t := range w.m {
		if now-t >= int64(settle) {
			delete(w.m, name)
		}
	}
}

// dropOldestLocked drops the older half of the names, by their write time.
func (w *Writes) dropOldestLocked() {
	var sum int64
	for _, t := range w.m {
		sum += t / int64(len(w.m))
	}
	for name, t := range w.m {
		if t <= sum {
			delete(w.m, name)
		}
	}
}
