package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Config configures a Cache. It is validated once by New.
type Config struct {
	// MaxFiles is the most open files the cache lists at once, and also the
	// most negative entries. 0 disables caching: every Acquire opens and
	// every Release closes.
	MaxFiles int

	// NegativeTTL is how long a name that did not exist (fs.ErrNotExist) is
	// remembered. 0 means 1s; negative disables negative entries.
	NegativeTTL time.Duration

	// NegativeBytes bounds the memory negative entries hold, counted as
	// the bytes of their names plus a fixed per-entry overhead
	// (NegativeEntryOverhead). Names are chosen by clients and may be as
	// long as a request line allows, so a count alone does not bound
	// memory. The oldest entries go first; a name that alone exceeds the
	// budget is not remembered. 0 means 1 MiB.
	NegativeBytes int64

	// Revalidate, if > 0, makes a hit on an entry last checked longer ago
	// than this stat the path and compare dev, inode, size, mtime and ctime with the
	// open file; a difference reopens it. Use it when no watcher invalidates
	// the cache, or while the watcher is degraded (see SetRevalidate).
	Revalidate time.Duration

	// Open opens name, a cleaned slash path relative to the media root, for
	// reading. The caller confines it to the root and applies its symlink
	// policy. Required.
	Open func(name string) (*os.File, error)

	// Stat stats name by path, for revalidation; same confinement as Open.
	// Required when MaxFiles > 0.
	Stat func(name string) (fs.FileInfo, error)

	// InlineMax: a file of at most this many bytes is read whole into
	// memory once, right after its open, and its Handle carries the bytes
	// (Handle.Bytes) for as long as it carries the descriptor, so a server
	// can send header and body with one syscall and never read the file
	// again. 0 disables inlining; it is off when MaxFiles is 0 (nothing
	// would be kept to read once).
	//
	// Freshness is the descriptor's: the bytes are dropped with the entry
	// (invalidation, revalidation, eviction, shedding). A file replaced by
	// rename is always wholly old or wholly new. A file rewritten in place
	// is caught by the watcher's modify event or by revalidation; until
	// then the bytes stay the old content. A read that overlaps an
	// in-place write is detected by a second fstat and not inlined, except
	// for a write already under way at the open (see inlineLoad), which
	// its own event ends.
	InlineMax int64

	// InlineBudget bounds the bytes of all inlined files held at once,
	// listed or still lent out. A file that would pass it is served
	// through its descriptor instead. 0 disables inlining.
	InlineBudget int64

	// WaitTimeout bounds how long a caller waits for another caller's open
	// of the same name (a hung network file system holds that open in the
	// kernel); past it Acquire returns ErrWaitTimeout and the open goes on
	// for its own caller. 0: wait as long as the open takes.
	WaitTimeout time.Duration

	// Now is the clock for negative entries and revalidation. nil means
	// time.Now.
	Now func() time.Time
}

// ErrWaitTimeout: Acquire waited WaitTimeout for an open of the same name
// already in progress and gave up.
var ErrWaitTimeout = errors.New("cache: waited too long for an open in progress")

const (
	defaultNegativeTTL   = time.Second
	defaultNegativeBytes = 1 << 20

	// NegativeEntryOverhead is what one negative entry costs beside its
	// name's bytes, for the NegativeBytes budget: the LRU's list element
	// and map slot, the entry and its *fs.PathError (161 bytes measured
	// with runtime.MemStats on amd64, Go 1.26; rounded up).
	NegativeEntryOverhead = 256
)

// Cache is a bounded, reference-counted cache of open files. All methods are
// safe for concurrent use.
type Cache struct {
	open         func(name string) (*os.File, error)
	stat         func(name string) (fs.FileInfo, error)
	now          func() time.Time
	maxFiles     int
	negativeTTL  time.Duration // <= 0: no negative entries
	negMax       int64         // budget for negBytes
	inlineMax    int64         // largest file inlined; 0: none
	inlineBudget int64         // most inline bytes alive at once
	revalidate   atomic.Int64  // nanoseconds; <= 0: no revalidation
	waitTimeout  time.Duration // <= 0: waiters wait for the open however long

	mu       sync.Mutex                            // protects files, negative, inflight, dropped, closed
	files    *simplelru.LRU[string, *Handle]       // listed open files; each holds one reference
	negative *simplelru.LRU[string, negativeEntry] // remembered fs.ErrNotExist results
	inflight map[string]*call                      // opens in progress, one per name
	dropped  []*Handle                             // unlisted under mu; their reference is dropped by unlock
	closed   bool                                  // Close was called: Acquire no longer caches
	negBytes int64                                 // cost of the listed negative entries (see NegativeBytes)

	stats counters
}

// negativeEntry remembers that opening a name failed with fs.ErrNotExist.
type negativeEntry struct {
	err     error // the error Open returned, handed out again
	expires int64 // Now().UnixNano() after which the entry no longer answers
}

// call is one open in progress. Callers that miss on the same name while it
// runs wait on done and share its result.
//
// It is hand-written rather than golang.org/x/sync/singleflight (not a
// dependency of this module) because it lives under c.mu with the LRU: the
// opener learns the exact number of waiters and gives each its reference
// before anyone sees the Handle (a waiter taking its own reference afterwards
// could find the count already at zero), and an invalidation can spoil and
// forget a call in the same critical section that unlists the entry.
type call struct {
	done    chan struct{} // closed when h and err are set
	waiters int           // callers waiting besides the opener; under Cache.mu
	settled bool          // h, err and the reference count are set: a waiter can no longer leave; under Cache.mu
	stale   bool          // an invalidation matched the name while open ran: list nothing; under Cache.mu
	h       *Handle       // result; carries one reference for the opener and one per waiter
	err     error
}

// New validates cfg and returns an empty cache.
func New(cfg Config) (*Cache, error) {
	switch {
	case cfg.MaxFiles < 0:
		return nil, fmt.Errorf("cache: MaxFiles %d is negative", cfg.MaxFiles)
	case cfg.Open == nil:
		return nil, errors.New("cache: Open is required")
	case cfg.MaxFiles > 0 && cfg.Stat == nil:
		return nil, errors.New("cache: Stat is required when MaxFiles > 0")
	case cfg.Revalidate < 0:
		return nil, fmt.Errorf("cache: Revalidate %v is negative", cfg.Revalidate)
	case cfg.NegativeBytes < 0:
		return nil, fmt.Errorf("cache: NegativeBytes %d is negative", cfg.NegativeBytes)
	case cfg.InlineMax < 0:
		return nil, fmt.Errorf("cache: InlineMax %d is negative", cfg.InlineMax)
	case cfg.InlineBudget < 0:
		return nil, fmt.Errorf("cache: InlineBudget %d is negative", cfg.InlineBudget)
	case cfg.WaitTimeout < 0:
		return nil, fmt.Errorf("cache: WaitTimeout %v is negative", cfg.WaitTimeout)
	}
	c := &Cache{
		open:        cfg.Open,
		stat:        cfg.Stat,
		now:         cfg.Now,
		maxFiles:    cfg.MaxFiles,
		negativeTTL: cfg.NegativeTTL,
		negMax:      cfg.NegativeBytes,
		waitTimeout: cfg.WaitTimeout,
	}
	if c.negMax == 0 {
		c.negMax = defaultNegativeBytes
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.negativeTTL == 0 {
		c.negativeTTL = defaultNegativeTTL
	}
	c.revalidate.Store(int64(cfg.Revalidate))
	if c.maxFiles == 0 {
		return c, nil
	}
	if cfg.InlineBudget > 0 {
		c.inlineMax, c.inlineBudget = cfg.InlineMax, cfg.InlineBudget
	}
	var err error
	// The callback runs inside simplelru calls, that is under c.mu: it only
	// queues the Handle, and unlock drops the reference after unlocking.
	c.files, err = simplelru.NewLRU(c.maxFiles, func(_ string, h *Handle) {
		c.dropped = append(c.dropped, h)
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	// The callback runs for every unlisting (Remove, RemoveOldest, Purge
	// and eviction by count), under c.mu: it keeps negBytes exact.
	c.negative, err = simplelru.NewLRU(c.maxFiles, func(name string, _ negativeEntry) {
		c.negBytes -= negativeCost(name)
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c.inflight = make(map[string]*call)
	return c, nil
}

// unlock releases c.mu, then drops the cache's reference on every Handle
// unlisted while it was held, so descriptors close outside the lock.
func (c *Cache) unlock() {
	if len(c.dropped) == 0 {
		c.mu.Unlock()
		return
	}
	dropped := c.dropped
	c.dropped = nil
	c.mu.Unlock()
	for _, h := range dropped {
		h.dropCacheRef()
	}
}

// Acquire returns the open file for name, with a reference the caller must
// return with Handle.Release. A hit makes no system call. name may alias
// the caller's reusable memory: the cache copies it before keeping it (a
// listed, in-flight or negative entry, an error it remembers). Errors wrap Open's
// (errors.Is(err, fs.ErrNotExist), syscall.EMFILE, ...) or are ErrIsDir or
// ErrNotRegular wrapped in an *fs.PathError.
func (c *Cache) Acquire(name string) (*Handle, error) {
	return c.acquire(name, true, nil)
}

// Outcome says how Acquire answered, for access logs.
type Outcome uint8

// Outcomes of AcquireOutcome.
const (
	Miss        Outcome = iota // opened the file, or waited for another caller's open
	Hit                        // a listed open file, no system call (a revalidation stat aside)
	NegativeHit                // a remembered "does not exist"
)

func (o Outcome) String() string {
	switch o {
	case Hit:
		return "hit"
	case NegativeHit:
		return "negative_hit"
	}
	return "miss"
}

// AcquireOutcome is Acquire, also saying whether it was a hit.
func (c *Cache) AcquireOutcome(name string) (*Handle, Outcome, error) {
	o := Miss
	h, err := c.acquire(name, true, &o)
	return h, o, err
}

// TryAcquire is AcquireOutcome for a caller that must not wait on
// storage (an event loop thread): it answers only what it can without a
// system call: a listed file whose revalidation is not due, or a
// remembered "does not exist". ready false means Acquire would have had to
// open, stat or wait for another caller's open; nothing was counted, and
// the caller asks Acquire from where it may block.
func (c *Cache) TryAcquire(name string) (h *Handle, o Outcome, err error, ready bool) {
	if c.maxFiles == 0 {
		return nil, Miss, nil, false
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, Miss, nil, false
	}
	if h, ok := c.files.Get(name); ok {
		if !h.tryRef() {
			c.mu.Unlock()
			return nil, Miss, nil, false
		}
		c.mu.Unlock()
		if period := c.revalidate.Load(); period > 0 && c.now().UnixNano()-h.checked.Load() >= period {
			h.Release()
			return nil, Miss, nil, false
		}
		c.stats.hits.Add(1)
		return h, Hit, nil, true
	}
	if ne, ok := c.negative.Get(name); ok && c.now().UnixNano() < ne.expires {
		c.mu.Unlock()
		c.stats.negativeHits.Add(1)
		return nil, NegativeHit, ne.err, true
	}
	c.mu.Unlock()
	return nil, Miss, nil, false
}

// acquire is Acquire; check false skips revalidation, so that a caller whose
// revalidation just dropped an entry does not loop on a file that keeps
// changing. out, when not nil, is set on a hit (it stays Miss otherwise).
func (c *Cache) acquire(name string, check bool, out *Outcome) (*Handle, error) {
	if c.maxFiles == 0 {
		c.stats.misses.Add(1)
		return c.openUncached(name)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.stats.misses.Add(1)
		return c.openUncached(name)
	}
	if h, ok := c.files.Get(name); ok {
		if h.tryRef() {
			c.mu.Unlock()
			if check && c.due(h) {
				return c.revalidateEntry(name, h, out)
			}
			c.stats.hits.Add(1)
			setOutcome(out, Hit)
			return h, nil
		}
		// Listed but unreferenced: only a double Release gets here (see
		// tryRef). Unlist it; dropCacheRef refuses at zero.
		c.files.Remove(name)
	}
	if ne, ok := c.negative.Get(name); ok {
		if c.now().UnixNano() < ne.expires {
			c.mu.Unlock()
			c.stats.negativeHits.Add(1)
			setOutcome(out, NegativeHit)
			return nil, ne.err
		}
		c.negative.Remove(name)
	}
	return c.loadLocked(name)
}

// due reports whether h must be revalidated now, and if so claims the check
// by moving h's check time forward, so one caller stats while the others
// keep using the entry.
func (c *Cache) due(h *Handle) bool {
	period := c.revalidate.Load()
	if period <= 0 {
		return false
	}
	now := c.now().UnixNano()
	last := h.checked.Load()
	return now-last >= period && h.checked.CompareAndSwap(last, now)
}

// revalidateEntry stats name and compares it with h, which the caller holds a
// reference on. If the path now names another file, or a changed one, or
// nothing, h is unlisted and the name is looked up afresh.
func (c *Cache) revalidateEntry(name string, h *Handle, out *Outcome) (*Handle, error) {
	c.stats.revalidations.Add(1)
	fi, err := c.stat(name)
	if err == nil && h.sameFile(fi) {
		c.stats.hits.Add(1)
		setOutcome(out, Hit)
		return h, nil
	}
	c.stats.stale.Add(1)
	c.mu.Lock()
	if cur, ok := c.files.Peek(name); ok && cur == h {
		c.files.Remove(name)
	}
	c.unlock()
	h.Release()
	return c.acquire(name, false, out)
}

func setOutcome(out *Outcome, o Outcome) {
	if out != nil {
		*out = o
	}
}

// loadLocked opens name, or waits for the open already in progress. It is
// called with c.mu held and releases it.
func (c *Cache) loadLocked(name string) (*Handle, error) {
	c.stats.misses.Add(1)
	// Everything below may keep name (inflight, the LRU, a negative
	// entry, an error): copy it, since the caller's may be reused.
	name = strings.Clone(name)
	if cl, ok := c.inflight[name]; ok {
		cl.waiters++
		c.unlock()
		return c.wait(name, cl)
	}
	cl := &call{done: make(chan struct{})}
	c.inflight[name] = cl
	c.unlock()

	h, err := c.openFile(name)

	c.mu.Lock()
	if c.inflight[name] == cl {
		delete(c.inflight, name)
	}
	listable := !cl.stale && !c.closed
	if cl.stale {
		// An open that started after the invalidation may have reached
		// the path before this one did, and so hold an older file than
		// the one about to be handed out (see spoilLocked): unlist it.
		c.forgetLocked(name)
	}
	switch {
	case err == nil:
		// Set the count before anyone else can see h: one reference for
		// this caller, one per waiter, and the cache's if it lists h.
		h.refs.Store(int32(1 + cl.waiters))
		if listable {
			h.refs.Add(1)
			c.insertLocked(name, h)
		}
	case listable && c.negativeTTL > 0 && errors.Is(err, fs.ErrNotExist):
		c.rememberMissingLocked(name, err)
	}
	cl.h, cl.err, cl.settled = h, err, true
	c.unlock()
	close(cl.done)
	return h, err
}

// wait waits for cl, another caller's open of name, at most WaitTimeout.
// A waiter that gives up leaves the count before the opener sets the
// references (under c.mu), so none is handed to it; one that finds the
// call settled takes its result, reference included.
func (c *Cache) wait(name string, cl *call) (*Handle, error) {
	if c.waitTimeout <= 0 {
		<-cl.done
		return cl.h, cl.err
	}
	t := time.NewTimer(c.waitTimeout)
	defer t.Stop()
	select {
	case <-cl.done:
		return cl.h, cl.err
	case <-t.C:
	}
	c.mu.Lock()
	if cl.settled {
		c.mu.Unlock()
		return cl.h, cl.err
	}
	cl.waiters--
	c.mu.Unlock()
	return nil, &fs.PathError{Op: "open", Path: name, Err: ErrWaitTimeout}
}

// negativeCost is what a negative entry for name counts against
// NegativeBytes.
func negativeCost(name string) int64 { return int64(len(name)) + NegativeEntryOverhead }

// rememberMissingLocked lists a negative entry for name, pushing out the
// oldest ones until it fits the byte budget. The error kept names the key
// itself (an *fs.PathError from Open usually holds its own copy of the
// name, which would double what a long name costs).
func (c *Cache) rememberMissingLocked(name string, err error) {
	cost := negativeCost(name)
	if cost > c.negMax {
		return
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	c.negative.Remove(name) // Add would replace without the callback
	for c.negBytes+cost > c.negMax {
		if _, _, ok := c.negative.RemoveOldest(); !ok {
			break
		}
	}
	c.negative.Add(name, negativeEntry{err: err, expires: c.now().Add(c.negativeTTL).UnixNano()})
	c.negBytes += cost
}

// insertLocked lists h under name. simplelru's Add would replace an existing
// value without the eviction callback, leaking its descriptor, so an
// existing entry is removed first (through the callback).
func (c *Cache) insertLocked(name string, h *Handle) {
	if _, ok := c.files.Peek(name); ok {
		c.files.Remove(name)
	}
	c.negative.Remove(name) // the name exists now
	if c.files.Add(name, h) {
		c.stats.evictions.Add(1)
	}
}

// openUncached opens name for one caller, without listing it: Release
// closes it.
func (c *Cache) openUncached(name string) (*Handle, error) {
	// The handle (and its *os.File) keep name, which may be the caller's
	// reusable memory.
	h, err := c.openFile(strings.Clone(name))
	if err != nil {
		return nil, err
	}
	h.refs.Store(1)
	return h, nil
}

// openFile opens and fstats name. On EMFILE or ENFILE it sheds the cache's
// entries, whose descriptors close unless lent out, and retries once.
func (c *Cache) openFile(name string) (*Handle, error) {
	f, err := c.open(name)
	if isFDLimit(err) {
		c.stats.emfile.Add(1)
		shed := c.Shed()
		f, err = c.open(name)
		if isFDLimit(err) {
			c.stats.emfile.Add(1)
			return nil, fmt.Errorf("cache: out of descriptors after shedding %d cached files: %w", shed, err)
		}
	}
	if err != nil {
		return nil, err
	}
	c.stats.openFiles.Add(1)
	h, err := newHandle(name, f, &c.stats.openFiles, c.now().UnixNano())
	if err != nil {
		_ = f.Close() // read-only and never lent out: nothing to report
		c.stats.openFiles.Add(-1)
		return nil, err
	}
	h.owner = c
	c.inlineLoad(h)
	return h, nil
}

func isFDLimit(err error) bool {
	return err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE))
}

// Invalidate unlists name, open or negative, and keeps an open of name in
// progress from being listed.
func (c *Cache) Invalidate(name string) {
	if c.maxFiles == 0 {
		return
	}
	c.mu.Lock()
	n := c.forgetLocked(name)
	c.unlock()
	c.stats.invalidations.Add(n)
}

// forgetLocked unlists name, open or negative, spoils its open in
// progress, and returns how many entries it unlisted.
func (c *Cache) forgetLocked(name string) uint64 {
	var n uint64
	if c.files.Remove(name) {
		n++
	}
	if c.negative.Remove(name) {
		n++
	}
	if cl, ok := c.inflight[name]; ok {
		c.spoilLocked(name, cl)
	}
	return n
}

// ForgetMissing unlists name's negative entry, if it has one: the caller
// knows the name may exist by now (a live directory, where a part missing
// a moment ago is written the next), so the next Acquire opens it again.
// It reports whether there was one. Unlike Invalidate it leaves an open
// entry and an open in progress alone, and counts no invalidation.
func (c *Cache) ForgetMissing(name string) bool {
	if c.maxFiles == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.negative.Remove(name)
}

// InvalidatePrefix unlists every entry at or under dir: dir itself and every
// name starting with dir + "/". Leading and trailing slashes are ignored;
// "" means everything. It walks all entries, so it costs O(entries).
func (c *Cache) InvalidatePrefix(dir string) {
	dir = strings.Trim(dir, "/")
	if dir == "" {
		c.InvalidateAll()
		return
	}
	if c.maxFiles == 0 {
		return
	}
	var n uint64
	c.mu.Lock()
	for _, name := range c.files.Keys() {
		if under(name, dir) && c.files.Remove(name) {
			n++
		}
	}
	for _, name := range c.negative.Keys() {
		if under(name, dir) && c.negative.Remove(name) {
			n++
		}
	}
	for name, cl := range c.inflight {
		if under(name, dir) {
			c.spoilLocked(name, cl)
		}
	}
	c.unlock()
	c.stats.invalidations.Add(n)
}

// under reports whether name is dir or inside it.
func under(name, dir string) bool {
	return strings.HasPrefix(name, dir) && (len(name) == len(dir) || name[len(dir)] == '/')
}

// InvalidateAll unlists every entry and keeps every open in progress from
// being listed.
func (c *Cache) InvalidateAll() {
	if c.maxFiles == 0 {
		return
	}
	c.mu.Lock()
	n := uint64(c.files.Len() + c.negative.Len())
	c.purgeLocked()
	c.unlock()
	c.stats.invalidations.Add(n)
}

func (c *Cache) purgeLocked() {
	c.files.Purge()
	c.negative.Purge()
	for name, cl := range c.inflight {
		c.spoilLocked(name, cl)
	}
}

// spoilLocked marks an open in progress stale and forgets it, because it may
// have opened the file as it was before the change being invalidated:
//
//  1. G1 misses on "a.ts" and opens it: the old inode.
//  2. A writer renames a new "a.ts" over it; the watcher calls
//     Invalidate("a.ts"), which finds nothing listed.
//  3. G1 lists the old descriptor, and no further event will unlist it.
//
// With the mark, G1 answers itself and its waiters (they asked before the
// change; a whole old file is a correct answer) but lists nothing, and a
// caller arriving after the invalidation starts a fresh open instead of
// joining G1's. The same holds for a remembered "does not exist".
//
// G1 may also reach the path late (descheduled between registering and
// its open), after a later open G2 did and after the file was replaced
// again, the watcher's event for that not yet in:
//
//  4. G2, started after step 2, opens "a.ts": the second version.
//  5. A writer replaces "a.ts" with a third version; G1 opens that one
//     and hands it to its caller.
//  6. G2 lists the second version, which that caller gets next: older
//     than what it already got.
//
// So G1, once done, forgets name as an invalidation would: whatever G2
// lists or is opening goes, and that caller's next request opens anew.
func (c *Cache) spoilLocked(name string, cl *call) {
	cl.stale = true
	delete(c.inflight, name)
}

// SetRevalidate sets the revalidation period at run time: d > 0 turns stat
// revalidation on (the watcher is off or degraded), d <= 0 turns it off.
func (c *Cache) SetRevalidate(d time.Duration) {
	c.revalidate.Store(max(int64(d), 0))
}

// Shed unlists every open file and returns how many it unlisted. Their
// descriptors close now if not lent out, else on their last Release.
// Negative entries hold no descriptor and stay. Acquire sheds by itself on
// EMFILE and ENFILE.
func (c *Cache) Shed() int {
	if c.maxFiles == 0 {
		return 0
	}
	c.mu.Lock()
	n := c.files.Len()
	c.files.Purge()
	c.unlock()
	c.stats.evictions.Add(uint64(n))
	return n
}

// Close unlists everything. Descriptors lent out close on their last
// Release. Later Acquires still work but cache nothing. It always returns
// nil.
func (c *Cache) Close() error {
	if c.maxFiles == 0 {
		return nil
	}
	c.mu.Lock()
	c.closed = true
	c.purgeLocked()
	c.unlock()
	return nil
}
