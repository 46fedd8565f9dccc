package origin

import (
	"bytes"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/accesslog"
	"segorigin/origin/cmcd"
	"segorigin/origin/token"
)

// accessLog writes one line per response (or one in sample) to w, when
// configured. A line is formatted into a pooled buffer without
// allocation (a token or CMCD in the request aside) and written with one
// Write.
type accessLog struct {
	w      io.Writer // nil: off
	format accesslog.Format
	sample uint64 // log one response in sample
	n      atomic.Uint64
	bufs   sync.Pool      // *accessScratch
	errLog rateLimitedLog // write failures, once per interval
}

// accessScratch is one line's working memory.
type accessScratch struct {
	line, path, query, referer, agent, host, client []byte
	method, proto, rng, text                        []byte
	entry                                           accesslog.Entry
	cmcd                                            cmcd.Data
}

// userCacheOutcome is the RequestCtx user value key under which route
// leaves the file cache's outcome for the access log.
const userCacheOutcome = "segorigin.cache"

// latencyBuckets span a cached playlist (~100 µs) to a slow 2 MiB segment.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 12)

func newLatency() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "segorigin_response_seconds",
		Help:    "Time from reading the request to the last body byte handed to the kernel, by kind of file; kind=\"error\" for 4xx and 5xx responses.",
		Buckets: latencyBuckets,
	}, []string{"kind"})
}

// recorder records every finished response: its status counted, its
// latency in the histogram, its access log line. It takes from the server
// only what it needs: the counters it moves, the log, the redaction in
// force and who a request is from.
type recorder struct {
	access     accessLog
	latency    *prometheus.HistogramVec
	latencyBy  [3]prometheus.Observer // latency's children by kind, resolved once
	latencyErr prometheus.Observer    // latency's child for 4xx and 5xx responses
	st         *counters
	log        *slog.Logger
	redactor   func() token.Redactor
	clientAddr func(*fasthttp.RequestCtx) netip.Addr
}

// init sets r up from cfg.
func (r *recorder) init(cfg Config, st *counters, redactor func() token.Redactor, clientAddr func(*fasthttp.RequestCtx) netip.Addr) {
	r.st, r.log, r.redactor, r.clientAddr = st, cfg.Logger, redactor, clientAddr
	r.latency = newLatency()
	for k := range r.latencyBy {
		r.latencyBy[k] = r.latency.WithLabelValues(kind(k).String())
	}
	r.latencyErr = r.latency.WithLabelValues(errorKindLabel)
	if cfg.AccessLog != nil {
		r.access.w, r.access.format, r.access.sample = cfg.AccessLog, cfg.AccessLogFormat, uint64(cfg.AccessLogSample)
	}
	r.access.errLog.Every, r.access.errLog.Now = 10*time.Second, cfg.Now
}

// finish records a completed response: latency, and the access log line.
// via is the body path ("sendfile", "ktls", "copy", or "" for no body).
func (r *recorder) finish(ctx *fasthttp.RequestCtx, k kind, sent int64, via string) {
	d := time.Since(requestTime(ctx))
	r.record(ctx, k, d)
	a := &r.access
	if a.w == nil || a.n.Add(1)%a.sample != 0 {
		return
	}
	r.logAccess(ctx, d, sent, via, nil)
}

// finishNoStream records a response whose body (if any) fasthttp writes
// from memory: errors, 304, HEAD, empty files.
func (q *handler) finishNoStream(ctx *fasthttp.RequestCtx, k kind) {
	n := int64(len(ctx.Response.Body()))
	q.rec.finish(ctx, k, n, "")
}

// refused writes the access line of a request the HTTP/1 layer refused
// before the handler (400, 408, 413, 414, 431, 501, 505; counted by
// handleParseError, so it adds no count): line is its request line as it
// arrived, which the line shows as nginx's $request does, nil when none
// did (a 408 before a line end: "-"); sent, the error body's bytes.
func (rc *recorder) refused(ctx *fasthttp.RequestCtx, line []byte, sent int64) {
	a := &rc.access
	if a.w == nil || a.n.Add(1)%a.sample != 0 {
		return
	}
	rl := splitRequestLine(line)
	rc.logAccess(ctx, time.Since(requestTime(ctx)), sent, "", &rl)
}

// requestLine is a request line's three parts as they arrived, split at
// its first two spaces; the target is not parsed beyond its '?'.
type requestLine struct{ method, path, query, proto []byte }

var space = []byte(" ")

// splitRequestLine splits line (without its line end) as nginx's $request
// shows it: bytes that are no request line at all stay whole, as the
// method, and a missing part is empty.
func splitRequestLine(line []byte) requestLine {
	var rl requestLine
	var target []byte
	rl.method, target, _ = bytes.Cut(line, space)
	target, rl.proto, _ = bytes.Cut(target, space)
	rl.path, rl.query, _ = bytes.Cut(target, []byte("?"))
	return rl
}

// logAccess formats and writes one access line: of a request the handler
// answered, or (rl set) of one refused before it, whose request line is
// rl and whose parsed header (ctx) may be partial. Every logged text that
// comes from the request goes through the redactor: a logged token could
// be replayed.
func (rc *recorder) logAccess(ctx *fasthttp.RequestCtx, d time.Duration, sent int64, via string, rl *requestLine) {
	a := &rc.access
	sc, _ := a.bufs.Get().(*accessScratch)
	if sc == nil {
		sc = new(accessScratch)
	}
	defer a.bufs.Put(sc)
	r := rc.redactor()
	req := &ctx.Request.Header
	e := &sc.entry
	*e = accesslog.Entry{
		Time:     requestTime(ctx),
		Status:   ctx.Response.StatusCode(),
		Bytes:    sent,
		Duration: d,
		Via:      via,
	}
	sc.client = sc.client[:0]
	if ip := rc.clientAddr(ctx); ip.IsValid() { // behind trusted proxies: the viewer
		sc.client = ip.AppendTo(sc.client)
	}
	e.Client = sc.client
	refused := rl != nil
	var line requestLine
	if refused {
		line = *rl
	} else {
		line = requestLine{ctx.Method(), ctx.URI().PathOriginal(), ctx.URI().QueryString(), req.Protocol()}
	}
	var info, qinfo token.Info
	sc.path, info = r.Append(sc.path[:0], line.path)
	sc.query, qinfo = r.Append(sc.query[:0], line.query)
	sc.referer, _ = r.Append(sc.referer[:0], req.Referer())
	sc.agent, _ = r.Append(sc.agent[:0], req.UserAgent())
	sc.host, _ = r.Append(sc.host[:0], req.Host())
	// A client chooses the method and version too: a token's segment
	// form is a valid method token.
	sc.method, _ = r.Append(sc.method[:0], line.method)
	sc.proto, _ = r.Append(sc.proto[:0], line.proto)
	e.Path, e.Query, e.Referer, e.UserAgent, e.Host = sc.path, sc.query, sc.referer, sc.agent, sc.host
	e.Method, e.Proto = sc.method, sc.proto
	if info == (token.Info{}) {
		info = qinfo
	}
	e.TokenKeyID, e.TokenExpires = info.KeyID, info.Expires
	if o, ok := ctx.UserValue(userCacheOutcome).(cache.Outcome); ok {
		e.Cache = o.String()
	}
	if !refused {
		// A refused request's header may be partial: its Range and
		// CMCD are not read.
		sc.rangeAndCMCD(ctx, r)
	}
	sc.line = a.format.Append(sc.line[:0], e)
	if _, err := a.w.Write(sc.line); err != nil {
		rc.st.AccessLogErrors.Add(1)
		if a.errLog.Allow() {
			rc.log.Error("access log write failed", "err", err, "suppressed", a.errLog.Suppressed())
		}
	}
	*e = accesslog.Entry{} // drop references to the request's buffers
}

// rangeAndCMCD fills the entry's Range and CMCD from ctx's request.
func (sc *accessScratch) rangeAndCMCD(ctx *fasthttp.RequestCtx, r token.Redactor) {
	e := &sc.entry
	var rh reqHeaders // one pass for Range and the CMCD headers, not five Peeks
	rh.scan(&ctx.Request.Header)
	sc.rng, _ = r.Append(sc.rng[:0], rh.rng)
	e.Range = sc.rng
	sc.cmcd = cmcd.Data{}
	if present, err := readCMCD(ctx, &rh.cmcd, &sc.cmcd); present {
		d := &sc.cmcd
		for _, v := range []*string{&d.ContentID, &d.SessionID, &d.NextObject, &d.NextRange} {
			*v = sc.redactString(r, *v)
		}
		e.CMCD, e.CMCDError = d, err != nil
	}
}

// redactString returns v redacted, v itself (no allocation) when
// redaction leaves it as it is.
func (sc *accessScratch) redactString(r token.Redactor, v string) string {
	if v == "" {
		return v
	}
	sc.text, _ = r.Append(sc.text[:0], []byte(v))
	if string(sc.text) == v {
		return v
	}
	return string(sc.text)
}

// readCMCD parses the request's CMCD (CTA-5004) from the CMCD query
// parameter and the four CMCD headers (hdrs: their values, nil when
// absent) into d. present says whether any was sent; err is the first
// malformed entry. Neither ever changes the response.
func readCMCD(ctx *fasthttp.RequestCtx, hdrs *[4][]byte, d *cmcd.Data) (present bool, err error) {
	add := func(v []byte) {
		present = true
		if e := d.Add(string(v)); e != nil && err == nil {
			err = e
		}
	}
	// The query is looked at only when it holds "CMCD=": parsing every
	// query's arguments would cost the requests that carry none.
	if q := ctx.URI().QueryString(); bytes.Contains(q, []byte("CMCD=")) {
		if v := ctx.QueryArgs().Peek("CMCD"); len(v) > 0 {
			add(v)
		}
	}
	for _, v := range hdrs {
		if len(v) > 0 {
			add(v)
		}
	}
	return present, err
}

// CMCDCounters count requests that carried CMCD, with labels of low
// cardinality only (no session or content IDs).
type CMCDCounters[C any] struct {
	Requests   [cmcd.NumObjectTypes][cmcd.NumStreamingFormats]C // GET/HEAD with CMCD, by ot and sf
	Starvation C                                                // of those, with bs: the player's buffer ran dry
	Malformed  C                                                // of those, with an entry dropped as malformed
}

// countCMCD parses and counts a GET or HEAD request's CMCD.
func (q *handler) countCMCD(ctx *fasthttp.RequestCtx, rh *reqHeaders) {
	if len(rh.cmcd[0])+len(rh.cmcd[1])+len(rh.cmcd[2])+len(rh.cmcd[3]) == 0 && len(ctx.URI().QueryString()) == 0 {
		return
	}
	var d cmcd.Data
	present, err := readCMCD(ctx, &rh.cmcd, &d)
	if !present {
		return
	}
	st := &q.stats.CMCD
	st.Requests[d.ObjectType][d.StreamingFormat].Add(1)
	if d.BufferStarvation {
		st.Starvation.Add(1)
	}
	if err != nil {
		st.Malformed.Add(1)
	}
}

// cmcdMetrics declares CMCD's metrics; object type and streaming format
// pairs no request carried are left out.
func cmcdMetrics(t *table, st *CMCDStats) {
	req := t.counter("cmcd_requests_total", "GET and HEAD requests carrying CMCD (CTA-5004), by object type (ot) and streaming format (sf); none when not given.", "object_type", "streaming_format")
	for ot := range st.Requests {
		for sf, v := range st.Requests[ot] {
			if v > 0 {
				t.add(req, v, cmcdLabel(cmcd.ObjectType(ot).String()), cmcdLabel(cmcd.StreamingFormat(sf).String()))
			}
		}
	}
	t.one("cmcd_buffer_starvation_total", "Requests whose CMCD says the player's buffer ran dry since its previous request (bs).", st.Starvation)
	t.one("cmcd_malformed_total", "Requests with a CMCD entry dropped as malformed (the request is served as if it were absent).", st.Malformed)
}

func cmcdLabel(token string) string {
	if token == "" {
		return "none"
	}
	return token
}
