package origin

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/ranges"
)

// A resolved request for a file is answered by fileSteps, in order. Each
// step either goes on to the next, answers (the answer is in ctx.Response;
// advance then releases the file), or suspends: it would have to block
// where blocking is not allowed (plan.noBlock: an event loop thread must
// not wait on a disk). A step that suspends has done nothing: counted
// nothing, changed nothing. The engine calls advance again where blocking
// is allowed and the request resumes at the step that suspended, with what
// the steps before it found (the open file, its validators, the settle
// rule's verdict), so no step runs twice for one request. This is how
// nginx's phase handlers return NGX_AGAIN and are called again, without
// the phases before them.
type fileStep uint8

const (
	stepOpen       fileStep = iota // the file from the cache
	stepValidators                 // its validators and media type
	stepPublish                    // a file still being written (origin/publish)
	stepLive                       // Low-Latency HLS delivery directives: answer, refuse, or wait (live.go)
	stepContentTag                 // -etag content: the content validator, hashed if need be
	stepRewrite                    // a playlist rewritten for a query token
	stepGzip                       // the content coding: gzip of a text file for a client that accepts it (gzip.go)
	stepConditions                 // RFC 9110 §13.2.2 preconditions
	stepRange                      // Range and If-Range (RFC 9110 §14.2, §13.1.5)
	stepCold                       // the first window of the body made resident
	stepRespond                    // status, header fields and the body's spans
	stepsDone
)

// stepResult is what a step tells advance.
type stepResult uint8

const (
	stepNext     stepResult = iota // go on to the next step
	stepAnswered                   // ctx.Response holds the whole answer
	stepSuspend                    // would block: nothing done, ask again where blocking is allowed
	stepWait                       // wait for the file to change: the engine parks the request, which runs again from stepOpen
)

var fileSteps = [stepsDone]func(*files, *fasthttp.RequestCtx, *plan) stepResult{
	stepOpen:       (*files).stepOpen,
	stepValidators: (*files).stepValidators,
	stepPublish:    (*files).stepPublish,
	stepLive:       func(f *files, ctx *fasthttp.RequestCtx, p *plan) stepResult { return f.lv.stepLive(ctx, p) },
	stepContentTag: (*files).stepContentTag,
	stepRewrite:    (*files).stepRewrite,
	stepGzip:       (*files).stepGzip,
	stepConditions: (*files).stepConditions,
	stepRange:      (*files).stepRange,
	stepCold:       (*files).stepCold,
	stepRespond:    (*files).stepRespond,
}

// files runs the file steps. It owns no state of its own: it is the
// request path's view of the subsystems the steps consult, each given by
// New (newFiles), so a step reaches what it needs and nothing of the
// server's wiring, listeners or engines.
type files struct {
	cache *cache.Cache
	resp  *responder // header fields, validators, error answers
	stats *counters
	pub   *publisher   // the settle rule
	lv    *liveSteps   // the live steps: Low-Latency HLS waits, hints and growing files
	tags  *contentTags // -etag content
	dates *dateClamp   // Last-Modified at or before Date
	pol   *policies    // the request's pinned policy: gzip, signed URLs, blocking-reload Cache-Control
	cold  *coldPath    // nil when -cold-readers is 0
	ra    *readAhead   // nil when read-ahead is off

	// clientID is who a playlist rewritten for a query token is bound to.
	clientID *clientIdentity

	etagContent bool // -etag content
	maxRanges   int
	now         func() time.Time
	logOutcome  bool // the access log records the cache outcome
}

// advance runs p's file steps from where it stopped. It returns with
// p.wouldBlock set when a step suspended (only with p.noBlock), or with the
// plan final: p.h is the body's file, or nil when ctx.Response holds the
// whole answer. What is counted from the final answer alone is counted
// here.
func (f *files) advance(ctx *fasthttp.RequestCtx, p *plan) {
	p.wouldBlock = false
	for p.step < stepsDone {
		switch fileSteps[p.step](f, ctx, p) {
		case stepNext:
			p.step++
		case stepAnswered:
			p.step = stepsDone
			if p.h != nil {
				p.h.Release()
				p.h = nil
			}
		case stepSuspend:
			if !p.noBlock {
				panic("origin: a file step suspended where blocking is allowed")
			}
			p.wouldBlock = true
			return
		case stepWait:
			// The version it read is not the one it waits for: the
			// next run opens the file again.
			if p.h != nil {
				p.h.Release()
			}
			p.h, p.step, p.live.waiting = nil, stepOpen, true
			return
		}
	}
	if p.inProgress {
		f.pub.counted(p.name.view(), p.inProgressSize)
	}
	f.lv.live.finish(p)
}

// stepOpen takes the file from the cache: without blocking only when the
// cache holds it open already.
func (f *files) stepOpen(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	var h *cache.Handle
	var outcome cache.Outcome
	var err error
	p.live.gen = f.lv.live.changes.Load() // before the file is taken: see liveWaits.add
	if p.noBlock {
		var ready bool
		if h, outcome, err, ready = f.cache.TryAcquire(p.name.view()); !ready {
			return stepSuspend
		}
	} else {
		h, outcome, err = f.cache.AcquireOutcome(p.name.view())
	}
	if outcome == cache.NegativeHit && f.lv.live.isLiveDir(p.name.view()) {
		// A name missing in a live directory is looked for again: the
		// packager writes it a moment after a client first asks.
		return f.recheckMissing(ctx, p)
	}
	return f.opened(ctx, p, h, outcome, err)
}

// opened is stepOpen's answer once the cache has given h, or err.
func (f *files) opened(ctx *fasthttp.RequestCtx, p *plan, h *cache.Handle, outcome cache.Outcome, err error) stepResult {
	if f.logOutcome {
		ctx.SetUserValue(userCacheOutcome, outcome)
	}
	if err != nil {
		if res := f.lv.holdMissing(ctx, p, err); res != stepNext {
			return res // a part a live playlist hints at (live_hint.go)
		}
		if isColdBusy(err) {
			f.stats.Cold.Refused.Add(1) // the open waited past -cold-deadline
		}
		f.resp.fail(ctx, err)
		f.lv.notFoundCacheControl(ctx, p)
		return stepAnswered
	}
	p.h, p.opened = h, outcome == cache.Miss
	return stepNext
}

// recheckMissing runs stepOpen again for a name in a live directory that
// the cache remembers missing, with the cache's word forgotten: where
// blocking is allowed, at once (the open finds the file or remembers it
// missing again, which this request then trusts); else the request is
// suspended and the open done where it may block.
func (f *files) recheckMissing(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	f.cache.ForgetMissing(p.name.view())
	if p.noBlock {
		return stepSuspend
	}
	h, outcome, err := f.cache.AcquireOutcome(p.name.view())
	return f.opened(ctx, p, h, outcome, err)
}

// stepValidators finds the file's validators, its change time and its
// media type. With -etag content the validator stored in the file's
// attribute is read where blocking is allowed.
func (f *files) stepValidators(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	h := p.h
	p.changed = h.ChangeTime()
	p.content = nil
	if f.etagContent {
		if p.content = f.tags.content(h, !p.noBlock); p.content == nil && p.noBlock {
			return stepSuspend
		} else if p.content != nil {
			p.changed = p.content.Changed
		}
	}
	p.v = validators{etag: h.ETag}
	f.dates.fileValidators(&p.v, h)
	p.mt = f.resp.lookupType(ctx, h.Name)
	p.kind = p.mt.kind
	return stepNext
}

// stepPublish applies the settle rule: a file still being written is
// answered 503, or with -in-progress uncached its bytes go out with
// no-store.
func (f *files) stepPublish(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	if !f.pub.writing(p.h, p.changed, p.opened, p.live.hint) || f.lv.streamGrowing(ctx, p) {
		return stepNext // published, or streamed as it grows (grow.go)
	}
	if res := f.lv.holdHinted(ctx, p); res != stepNext {
		return f.pub.held(p.h, res) // a part a live playlist hints at (live_hint.go)
	}
	uncached, err := f.pub.refuse(p.h)
	if err != nil {
		f.resp.fail(ctx, err)
		ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
		return stepAnswered
	}
	if uncached {
		p.inProgress, p.inProgressSize = true, p.h.Size
	}
	return stepNext
}

// stepContentTag: with -etag content the entity tag is the content's,
// hashed now when neither the entry nor the file's attribute knew it. A
// file in progress served uncached keeps its size-mtime tag: its bytes so
// far are a version of their own.
func (f *files) stepContentTag(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	if !f.etagContent || p.inProgress {
		return stepNext
	}
	if p.content == nil {
		if p.noBlock {
			return stepSuspend
		}
		c, err := f.tags.hashContent(p.h)
		if err != nil {
			f.resp.fail(ctx, err)
			return stepAnswered
		}
		p.content = c
	}
	p.v.etag = p.content.ETag
	return stepNext
}

// stepRewrite answers a playlist authorised by a query token with the
// token written into it (serveRewritten), where that applies.
func (f *files) stepRewrite(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	if p.inProgress || !p.g.query.rewrites() || p.mt.kind != kindPlaylist {
		return stepNext
	}
	return f.serveRewritten(ctx, p)
}

// stepConditions evaluates the preconditions: 304 and 412 answer here.
func (f *files) stepConditions(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	switch evaluatePreconditions(&p.rh, p.v) {
	case notModified:
		f.resp.setValidators(ctx, p.mt.kind, p.v, p.g, p.inProgress)
		f.lv.liveCacheControl(ctx, p)
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		f.stats.Kinds[p.mt.kind].Add(1)
		return stepAnswered
	case preconditionFailed:
		f.resp.fail(ctx, errPrecondition)
		return stepAnswered
	}
	return stepNext
}

// stepRange reads the Range header into p.spans. RFC 9110 §14.2: "A
// server MUST ignore a Range header field received with a request method
// that is unrecognized or for which range handling is not defined" — and
// for HEAD it is not: "The Range header field is evaluated ... only for
// GET", so HEAD answers as GET without Range would.
func (f *files) stepRange(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	p.spans = nil
	if len(p.rh.rng) == 0 || !ctx.IsGet() || !ifRange(p.rh.ifRange, p.v, f.now()) {
		return stepNext
	}
	size := p.h.Size
	spans, err := ranges.ParseInto(p.spanBuf[:0], string(p.rh.rng), size, f.maxRanges)
	switch {
	case err == nil:
		p.spans = spans
	case errors.Is(err, ranges.ErrUnsatisfiable):
		ctx.Response.Header.Set("Content-Range", ranges.UnsatisfiedContentRange(size))
		f.resp.fail(ctx, err)
		return stepAnswered
	default:
		// ErrInvalid and ErrTooMany: ignore the Range header and send
		// the whole representation (RFC 9110 §14.2).
		p.rangesIgnored = true
	}
	return stepNext
}

// stepCold makes the body's first window resident (beforeBody): a cold
// file can still be refused with 503 before its header leaves.
func (f *files) stepCold(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	return f.beforeBody(ctx, p)
}

// stepRespond writes the status and header fields of a 200 or 206 and
// describes its body: the spans of p.h, and their multipart framing.
func (f *files) stepRespond(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	h, mt := p.h, p.mt
	if p.rangesIgnored {
		f.stats.RangesIgnored.Add(1)
	}
	f.resp.setValidators(ctx, mt.kind, p.v, p.g, p.inProgress)
	f.lv.liveCacheControl(ctx, p)
	f.stats.Kinds[mt.kind].Add(1)
	hdr := &ctx.Response.Header
	hdr.SetCanonical(hdrAcceptRanges, valBytes)
	f.gzipHeader(ctx, p)
	var mp *ranges.Multipart
	var total int64
	spans := p.spans
	switch len(spans) {
	case 0:
		spans = append(p.spanBuf[:0], ranges.Span{Start: 0, Length: h.Size})
		total = h.Size
		hdr.SetContentType(mt.contentType)
		ctx.SetStatusCode(fasthttp.StatusOK)
	case 1:
		total = spans[0].Length
		hdr.SetContentType(mt.contentType)
		hdr.SetCanonical(hdrContentRange, []byte(spans[0].ContentRange(h.Size)))
		ctx.SetStatusCode(fasthttp.StatusPartialContent)
	default:
		mp = ranges.NewMultipart(f.resp.boundary(), mt.contentType, h.Size, spans)
		total = mp.Len()
		hdr.SetContentType(mp.ContentType())
		ctx.SetStatusCode(fasthttp.StatusPartialContent)
		f.stats.Multipart.Add(1)
	}
	if ctx.IsHead() || total == 0 {
		// No body to send: fasthttp keeps the Content-Length we set when
		// the body is empty and SkipBody is set for HEAD.
		hdr.SetContentLength(int(total))
		return stepAnswered
	}
	p.spans, p.mp, p.total = spans, mp, total
	return stepNext
}
