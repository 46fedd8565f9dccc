package origin

import (
	"path"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// A file still being written in a live directory (live_hint.go: a
// directory whose newest media playlist can block) is streamed as it
// grows: LL-HLS parts written in place, LL-DASH chunked CMAF segments. A
// GET without Range from an HTTP/1.1 client, for a file the publishing
// rule finds in progress because a writer holds it open (the kernel's
// word, writerOpen), is answered 200 with Transfer-Encoding: chunked
// (RFC 9112 §7.1), no Content-Length, validators or Accept-Ranges, and
// Cache-Control: no-store: a cache must not keep a stream that may be
// cut. Each chunk is the bytes written since the last one, sent as soon
// as they are seen; the last chunk follows once the writer has closed
// the file and every byte is sent. A reader that joins later gets what
// exists, then the rest.
//
// Between chunks the connection is parked and listed in liveWaits under
// the file's name (kind liveGrow): the watcher's write events on that
// name wake it, and so does a poll every growPoll, since the writer's
// close is no event the watcher sees. If the file does not grow for
// three target durations of the directory's playlist, or the server
// drains, the stream ends without its last chunk (the connection
// closes), so the client sees an incomplete response. HEAD, a Range,
// HTTP/1.0 and VOD directories keep the publishing rule's answer. A
// request held for a part a playlist hints at (live_hint.go) stays held
// until the part is whole: that answer, unlike a stream, a cache may
// keep.

// growPoll is how often a parked stream looks for new bytes and its
// writer's close when no watcher event comes.
const growPoll = 100 * time.Millisecond

// GrowCounters count the files streamed as they grow.
type GrowCounters[C any] struct {
	Streaming C // streams in progress: a level, not a count
	Complete  C // ended with the last chunk: the writer closed the file and every byte was sent
	TimedOut  C // ended without the last chunk: the file did not grow for three target durations
	Drained   C // ended without the last chunk by a drain
	Aborted   C // ended by the connection: the client left, or a write failed or timed out
}

type growCounters = GrowCounters[atomic.Int64]

func growMetrics(t *table, st *GrowCounters[int64]) {
	t.add(t.gauge("live_streams", "Files in live directories streamed now as they are written (chunked)."), st.Streaming)
	m := t.counter("live_streams_total", "Streams of growing files by how they ended: complete (the last chunk sent), timed_out (the file stopped growing for three target durations), drained (shutdown), aborted (the connection ended).", "outcome")
	t.add(m, st.Complete, "complete")
	t.add(m, st.TimedOut, "timed_out")
	t.add(m, st.Drained, "drained")
	t.add(m, st.Aborted, "aborted")
}

// growOutcome is how a stream ended.
type growOutcome uint8

const (
	growAborted growOutcome = iota
	growComplete
	growTimedOut
	growDrained
)

// count counts a stream's end.
func (o growOutcome) count(st *growCounters) {
	st.Streaming.Add(-1)
	[...]*atomic.Int64{&st.Aborted, &st.Complete, &st.TimedOut, &st.Drained}[o].Add(1)
}

// streamGrowing is stepPublish's for p, a file still being written: true
// when it is streamed as it grows, its header made here; the steps after
// stepPublish are then skipped (validators, ranges and cold reads do not
// apply to a body that does not exist yet). The engine sends the body
// (h1Req.startGrowing).
func (lv *liveSteps) streamGrowing(ctx *fasthttp.RequestCtx, p *plan) bool {
	if !liveWaitable || !lv.live.watching || p.live.hint && !p.live.prefix || !ctx.IsGet() || len(p.rh.rng) > 0 ||
		!ctx.Request.Header.IsHTTP11() {
		return false
	}
	limit := lv.live.dirLimit(path.Dir(p.h.Name))
	if limit <= 0 {
		return false // not a live directory
	}
	if open, known := writerOpen(p.h.Fd()); !known || !open {
		return false
	}
	lv.pub.drop(p.h.Name) // the next request opens it again, at its size then
	p.grow, p.growStall = true, time.Duration(limit)*time.Second
	hdr := &ctx.Response.Header
	hdr.SetContentType(p.mt.contentType)
	hdr.SetCanonical(hdrCacheControl, valNoStore)
	ctx.SetStatusCode(fasthttp.StatusOK)
	lv.stats.Kinds[p.mt.kind].Add(1)
	p.step = stepRespond // advance goes past it: the plan is final
	return true
}

// dirLimit is three target durations, in seconds, of a live playlist of
// dir; 0 when dir is not live.
func (lw *liveWaits) dirLimit(dir string) int64 {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, pl := range lw.dirs[dir] {
		if v := lw.versions[pl]; v != nil && v.pl.CanBlockReload && !v.pl.EndList {
			return v.pl.BlockLimit()
		}
	}
	return lw.prefixes.limit(dir) // live by the operator's word (liveprefix.go)
}

// growOnly reports whether every waiter of l is a stream of a growing
// file, which opens nothing when woken.
func (l *liveList) growOnly() bool {
	for _, e := range l.waiters {
		if e.kind != liveGrow {
			return false
		}
	}
	return true
}

// isDraining reports whether the server drains.
func (lw *liveWaits) isDraining() bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.draining
}
