package origin

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/llhls"
)

// Low-Latency HLS from a packager's output (draft-pantos-hls-rfc8216bis
// §6.2.5): a request for a media playlist with Delivery Directives
// (_HLS_msn, _HLS_part, _HLS_skip). stepLive decides from the version of
// the playlist the request opened: answer it now (satisfied, or a
// playlist that cannot block), refuse it (400), or wait. A waiting
// request holds no goroutine: its connection is parked and it is listed
// under the playlist's name (liveWaits); the watcher's invalidation of
// that name posts every waiter back to its connection, where the request
// runs again from stepOpen with the new version, and a timer per
// playlist answers 503 to those still waiting after three target
// durations. Many waiters on one playlist are answered from one open and
// one parse of each version (liveVersion). A request for a part a
// playlist hints at waits the same way, listed under the part's name
// (live_hint.go).

var (
	// errLiveDirective: a malformed directive, _HLS_part without
	// _HLS_msn, or a segment or part too far beyond the playlist's end
	// (§6.2.5.2): 400.
	errLiveDirective = errors.New("origin: refused delivery directive")
	// errLiveTimeout: the playlist did not satisfy a blocking reload in
	// three target durations, or the server is draining: 503, no-store.
	errLiveTimeout = errors.New("origin: blocking playlist reload not satisfied in time")
)

// liveMaxPlaylist bounds the playlists whose directives are honoured (a
// version of each is kept in memory while it is the newest): far above a
// live window's playlist. A larger one is served as it is.
const liveMaxPlaylist = 1 << 20

// liveMaxVersions bounds the playlists liveWaits remembers a parsed
// version of; past it the set starts over.
const liveMaxVersions = 1024

// liveState is a request's part in the plan: its directives and where its
// wait stands.
type liveState struct {
	req      llhls.Request
	parsed   bool      // req was read from the query (once per request)
	blocking bool      // the answer is to a blocking reload or delta update: its Cache-Control
	waiting  bool      // stepLive asked the engine to park the request (advance returned)
	expired  bool      // the wait's time is up (set by liveWaits before it posts the request)
	hint     bool      // it waits for a hinted part or segment to be written, not for its playlist
	prefix   bool      // of those, the next segment under a live prefix: streamed once it appears (liveprefix.go)
	held     bool      // it was parked: its answer is counted by kind when final (liveWaits.finish)
	gaveUp   bool      // it is answered 503: its time was up, or the server drains
	drained  bool      // of those, the drain's
	deadline time.Time // when the wait began plus three target durations; zero before it waits
	gen      uint64    // liveWaits.changes when stepOpen took the file
}

// liveWaiter is a parked request, woken from any goroutine.
type liveWaiter interface {
	// wakeLive posts the request back to its connection to run again from
	// stepOpen; expired: its deadline passed (or the server drains).
	wakeLive(expired bool)
}

// liveWaits owns the parked requests of every playlist and the parsed
// versions of the playlists they read.
type liveWaits struct {
	// changes counts the watcher's invalidations: a request that took its
	// file before the last one may have read an older version than the
	// disk holds, and runs again rather than wait.
	changes  atomic.Uint64
	acquire  func(name string) (*cache.Handle, error) // the cache's Acquire
	watching bool                                     // the watcher runs: a change wakes waiters
	prefixes livePrefixes                             // -live-prefix (liveprefix.go)
	st       *liveCounters
	mu       sync.Mutex // protects lists, versions, dirs, hintLists, draining
	lists    map[string]*liveList
	versions map[string]*liveVersion
	// dirs lists the live playlists of each directory (live_hint.go);
	// hintLists counts the lists of lists that wait for a hinted part.
	dirs      map[string][]string
	hintLists int
	draining  bool
	// wakers counts the goroutines that open a changed playlist once and
	// post its waiters (one per change of a playlist with waiters); drain
	// waits for them.
	wakers sync.WaitGroup
}

// liveList is one playlist's waiters and the timer of the earliest
// deadline among them.
type liveList struct {
	waiters []liveEntry
	timer   *time.Timer
	next    time.Time // the timer's deadline
	hint    bool      // the name is a hinted part's (hint waiters)
}

type liveEntry struct {
	w        liveWaiter
	deadline time.Time
	kind     liveKind
}

// liveVersion is one version of a playlist (its validators, bytes, what
// it says) and the delta updates made of it, made once.
type liveVersion struct {
	etag   string
	ctime  int64
	size   int64
	body   []byte // nil unless the playlist can block or skip
	pl     llhls.Playlist
	unread bool // not a media playlist: its directives are ignored
	once   [llhls.SkipV2 + 1]sync.Once
	delta  [llhls.SkipV2 + 1][]byte // nil: nothing to skip
	// hinted is what the playlist says may be asked for before it exists
	// (liveVersion.hints), made once.
	hintOnce sync.Once
	hinted   []string
}

func newLiveWaits(cfg Config, st *liveCounters, acquire func(string) (*cache.Handle, error)) *liveWaits {
	lw := &liveWaits{acquire: acquire, watching: cfg.Watch, st: st, lists: make(map[string]*liveList),
		versions: make(map[string]*liveVersion), dirs: make(map[string][]string),
		prefixes: newLivePrefixes(cfg.LivePrefixes, cfg.LiveHold)}
	return lw
}

// liveSteps is the file steps' live part: Delivery Directives (blocking
// reloads and delta updates), parts a playlist hints at, and files
// streamed as they grow. It takes the subsystems those consult, and the
// other file steps for an answer made in memory.
type liveSteps struct {
	live  *liveWaits
	cache *cache.Cache
	resp  *responder
	stats *counters
	pub   *publisher
	dates *dateClamp
	pol   *policies
	files *files // serveMemory and readWhole: the answer from memory the rewrite step gives too
}

// stepLive answers, refuses or parks a request with Delivery Directives
// for an HLS media playlist; anything else goes on.
func (lv *liveSteps) stepLive(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	if p.mt.kind != kindPlaylist || !strings.HasSuffix(p.h.Name, ".m3u8") {
		return stepNext
	}
	if !p.live.parsed {
		q := ctx.URI().QueryString()
		if !bytes.Contains(q, []byte("_HLS_")) {
			lv.notePlaylist(ctx, p)
			return stepNext
		}
		r, err := llhls.ParseQuery(q)
		if err != nil {
			lv.resp.fail(ctx, errors.Join(errLiveDirective, err))
			return stepAnswered
		}
		p.live.req, p.live.parsed = r, true
	}
	if !p.live.req.Any() {
		return stepNext
	}
	v, res := lv.liveVersion(ctx, p)
	if v == nil {
		return res
	}
	switch v.pl.Decide(p.live.req) {
	case llhls.TooFar:
		lv.resp.fail(ctx, errLiveDirective)
		return stepAnswered
	case llhls.Wait:
		if res, held := lv.hold(ctx, p, v.pl.BlockLimit(), errLiveTimeout); held {
			return res
		}
	}
	p.live.blocking = p.live.req.HasMSN && v.pl.CanBlockReload && !v.pl.EndList
	if d := v.deltaFor(p.live.req.Skip); d != nil && !p.g.query.rewrites() {
		p.live.blocking = true
		return lv.serveDelta(ctx, p, d)
	}
	return stepNext
}

// liveVersion is the parsed version of p.h: from liveWaits when a request
// parsed it already, else read (inlined bytes, or from the file where
// blocking is allowed) and parsed now. nil with stepNext: a playlist
// whose directives are ignored (not a media playlist, too large).
func (lv *liveSteps) liveVersion(ctx *fasthttp.RequestCtx, p *plan) (*liveVersion, stepResult) {
	v, suspend, err := lv.readVersion(p.h, p.noBlock)
	switch {
	case suspend:
		return nil, stepSuspend
	case err != nil:
		lv.resp.fail(ctx, err)
		return nil, stepAnswered
	case v == nil || v.unread:
		return nil, stepNext
	}
	return v, stepNext
}

// readVersion is the parsed version of h, the file of a playlist: from
// liveWaits when a request parsed it already, else read (inlined bytes, or
// from the file unless noBlock: suspend) and parsed now. nil: too large.
// A version that is no media playlist is kept too, unread, so that it is
// not read again.
func (lv *liveSteps) readVersion(h *cache.Handle, noBlock bool) (v *liveVersion, suspend bool, err error) {
	// Kept with the handle too: every request for a playlist asks, and
	// the handle answers without the lock every loop would share.
	if v, ok := h.Parsed().(*liveVersion); ok {
		return v, false, nil
	}
	if v := lv.live.version(h); v != nil {
		h.SetParsed(v)
		return v, false, nil
	}
	if h.Size > liveMaxPlaylist {
		return nil, false, nil
	}
	body := bytes.Clone(h.Bytes) // the handle's bytes go with it; the version outlives it
	if h.Bytes == nil && h.Size > 0 {
		if noBlock {
			return nil, true, nil
		}
		if body, err = lv.files.readWhole(h); err != nil {
			return nil, false, err
		}
	}
	v = &liveVersion{etag: h.ETag, ctime: h.ChangeTime(), size: h.Size, body: body}
	if v.pl, err = llhls.Parse(body); err != nil || !v.pl.CanBlockReload && !v.pl.CanSkip() {
		// Nothing to block on or skip: only what it says is kept.
		v.body, v.unread = nil, err != nil
	}
	lv.live.store(h.Name, v)
	h.SetParsed(v)
	return v, false, nil
}

// deltaFor is the delta update of v that skip asks for, made once; nil
// when there is none (no skip asked, the playlist cannot skip, or nothing
// is far enough from its end).
func (v *liveVersion) deltaFor(skip llhls.Skip) []byte {
	if skip == llhls.SkipNone || !v.pl.CanSkip() {
		return nil
	}
	v.once[skip].Do(func() {
		if d, n := v.pl.Delta(nil, v.body, skip); n > 0 {
			v.delta[skip] = d
		}
	})
	return v.delta[skip]
}

// serveDelta answers with a delta update, whose entity tag is derived
// from the file's and the body, as a rewritten playlist's is.
func (lv *liveSteps) serveDelta(ctx *fasthttp.RequestCtx, p *plan, body []byte) stepResult {
	v := validators{etag: rewrittenETag(p.h.ETag, body)}
	lv.dates.fileValidators(&v, p.h)
	return lv.files.serveMemory(ctx, p, v, body, false)
}

// liveCacheControl gives the answer to a blocking reload or delta update
// its Cache-Control, in place of the playlist's (a file still being
// written keeps no-store).
func (lv *liveSteps) liveCacheControl(ctx *fasthttp.RequestCtx, p *plan) {
	if !p.live.blocking || p.inProgress {
		return
	}
	cc := lv.pol.of(ctx).blockingCC
	if cc == nil {
		ctx.Response.Header.Del("Cache-Control")
		return
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, cc)
}

// notFoundCacheControl gives a 404 for a name in a live directory
// -cache-control-notfound-live in place of -cache-control-notfound: the
// packager writes the part a moment later, and a CDN that kept it
// missing would answer 404 for it meanwhile.
func (lv *liveSteps) notFoundCacheControl(ctx *fasthttp.RequestCtx, p *plan) {
	if ctx.Response.StatusCode() != fasthttp.StatusNotFound || !lv.live.isLiveDir(p.name.view()) {
		return
	}
	if cc := lv.pol.of(ctx).notFoundLiveCC; cc != nil {
		ctx.Response.Header.SetCanonical(hdrCacheControl, cc)
	} else {
		ctx.Response.Header.Del("Cache-Control")
	}
}

// hold parks a request that waits (stepWait), or answers it 503 with err
// and no-store when its time is up; held false: nothing would wake it, and
// it is answered with what there is.
func (lv *liveSteps) hold(ctx *fasthttp.RequestCtx, p *plan, limit int64, err error) (res stepResult, held bool) {
	switch lv.live.outcome(ctx, p, limit) {
	case liveParks:
		return stepWait, true
	case liveTimedOut:
		lv.resp.fail(ctx, err)
		ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
		return stepAnswered, true
	}
	return stepNext, false
}

// liveOutcome is what a request the playlist does not satisfy yet gets.
type liveOutcome uint8

const (
	liveAnswerNow liveOutcome = iota // nothing would wake it: answered with what there is
	liveParks                        // the engine parks it (stepWait)
	liveTimedOut                     // its time is up, or the server drains: 503
)

// outcome decides for a request that the playlist does not satisfy yet:
// it parks, unless its time is up or the server drains (503; draining,
// the connection closes), or nothing would wake it: without the watcher,
// or on an engine that cannot park, it is answered now.
func (lw *liveWaits) outcome(ctx *fasthttp.RequestCtx, p *plan, limit int64) liveOutcome {
	lw.mu.Lock()
	draining := lw.draining
	lw.mu.Unlock()
	switch {
	case p.live.expired || draining:
		if draining {
			ctx.SetConnectionClose()
		}
		p.live.gaveUp, p.live.drained = true, draining
		return liveTimedOut
	case !liveWaitable || !lw.watching:
		return liveAnswerNow
	}
	if p.live.deadline.IsZero() {
		p.live.deadline = time.Now().Add(time.Duration(limit) * time.Second)
	}
	p.live.held = true
	return liveParks
}

// add lists w as waiting for name to change, unless name changed since
// the request took its file (gen) or the server drains: false, and the
// request runs again at once.
func (lw *liveWaits) add(name string, w liveWaiter, gen uint64, deadline time.Time, kind liveKind) bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.draining || lw.changes.Load() != gen {
		return false
	}
	l := lw.lists[name]
	if l == nil {
		key := strings.Clone(name) // name may alias the request's memory
		l = &liveList{next: deadline, hint: kind == liveHint}
		l.timer = time.AfterFunc(time.Until(deadline), func() { lw.expire(key) })
		lw.lists[key] = l
		if l.hint {
			lw.hintLists++
		}
	} else if deadline.Before(l.next) {
		l.next = deadline
		l.timer.Reset(time.Until(deadline))
	}
	l.waiters = append(l.waiters, liveEntry{w: w, deadline: deadline, kind: kind})
	if kind < numLiveKinds {
		lw.st.Held[kind].Add(1)
	}
	return true
}

// changed is the watcher's word that name may have changed (after the
// cache's invalidation). Its waiters are posted back by one goroutine,
// which first opens the new version, so that they find it in the cache
// rather than each open it. Its owner is liveWaits (wakers); it ends
// once the open is done and the waiters are posted.
func (lw *liveWaits) changed(name string) {
	lw.changes.Add(1)
	lw.mu.Lock()
	l := lw.lists[name]
	if l != nil {
		lw.unlistLocked(name, l)
	}
	opens := l != nil && !l.growOnly() // streams look at the file themselves (grow.go)
	if opens {
		lw.wakers.Add(1)
	}
	hinted := lw.takeHintsLocked(name)
	lw.mu.Unlock()
	for _, h := range hinted {
		lw.wake(h, false)
	}
	if !opens {
		if l != nil {
			lw.wake(l, false)
		}
		return
	}
	go func() {
		defer lw.wakers.Done()
		if h, err := lw.acquire(name); err == nil {
			h.Release() // the cache keeps it listed for the waiters
		}
		lw.wake(l, false)
	}()
}

// unlistLocked takes l, the list of name, off liveWaits.
func (lw *liveWaits) unlistLocked(name string, l *liveList) {
	delete(lw.lists, name)
	l.timer.Stop()
	if l.hint {
		lw.hintLists--
	}
}

// wake posts every waiter of l, which is listed no more, back to its
// connection.
func (lw *liveWaits) wake(l *liveList, expired bool) {
	for _, e := range l.waiters {
		if e.kind < numLiveKinds {
			lw.st.Held[e.kind].Add(-1)
		}
		e.w.wakeLive(expired)
	}
}

// changedAll: anything may have changed (a directory renamed, the watch
// set rebuilt): every waiter runs again.
func (lw *liveWaits) changedAll() {
	lw.changes.Add(1)
	for _, l := range lw.takeAll(false) {
		lw.wake(l, false)
	}
}

// expire answers the waiters of name whose deadline has passed (their
// timer's goroutine) and sets the timer for the next.
func (lw *liveWaits) expire(name string) {
	now := time.Now()
	var due []liveEntry
	lw.mu.Lock()
	if l := lw.lists[name]; l != nil {
		keep := l.waiters[:0]
		var next time.Time
		for _, e := range l.waiters {
			switch {
			case !e.deadline.After(now):
				due = append(due, e)
			case next.IsZero() || e.deadline.Before(next):
				next = e.deadline
				fallthrough
			default:
				keep = append(keep, e)
			}
		}
		clear(l.waiters[len(keep):])
		l.waiters = keep
		if len(keep) == 0 {
			lw.unlistLocked(name, l)
		} else {
			l.next = next
			l.timer.Reset(next.Sub(now))
		}
	}
	lw.mu.Unlock()
	lw.wake(&liveList{waiters: due}, true)
}

// leave takes w, listed under name, off liveWaits: its client has gone.
// false: it is listed no more (woken, its resume posted).
func (lw *liveWaits) leave(name string, w liveWaiter) bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	l := lw.lists[name]
	if l == nil {
		return false
	}
	i := slices.IndexFunc(l.waiters, func(e liveEntry) bool { return e.w == w })
	if i < 0 {
		return false
	}
	if k := l.waiters[i].kind; k < numLiveKinds {
		lw.st.Held[k].Add(-1)
		lw.st.ClientLeft[k].Add(1)
	}
	l.waiters = slices.Delete(l.waiters, i, i+1)
	if len(l.waiters) == 0 {
		lw.unlistLocked(name, l)
	}
	return true
}

// drain answers every waiter now (503, Connection: close) and every
// later request that would wait; it returns once the wakers are done.
func (lw *liveWaits) drain() {
	for _, l := range lw.takeAll(true) {
		lw.wake(l, true)
	}
	lw.wakers.Wait()
}

// takeAll unlists every waiter (and, with drain, refuses later ones).
func (lw *liveWaits) takeAll(drain bool) map[string]*liveList {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.draining = lw.draining || drain
	all := lw.lists
	lw.lists, lw.hintLists = make(map[string]*liveList), 0
	for _, l := range all {
		l.timer.Stop()
	}
	return all
}

// version is the stored version of h's playlist, if it is h's.
func (lw *liveWaits) version(h *cache.Handle) *liveVersion {
	lw.mu.Lock()
	v := lw.versions[h.Name]
	lw.mu.Unlock()
	if v == nil || v.etag != h.ETag || v.ctime != h.ChangeTime() || v.size != h.Size {
		return nil
	}
	return v
}

// store keeps v as the version of name.
func (lw *liveWaits) store(name string, v *liveVersion) {
	lw.mu.Lock()
	if len(lw.versions) >= liveMaxVersions {
		lw.versions = make(map[string]*liveVersion)
	}
	name = strings.Clone(name)
	lw.versions[name] = v
	lw.noteDirLocked(name, v)
	lw.mu.Unlock()
}

// waiters is how many requests wait now.
func (lw *liveWaits) waiters() int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	n := 0
	for _, l := range lw.lists {
		n += len(l.waiters)
	}
	return n
}
