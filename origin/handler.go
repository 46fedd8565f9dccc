package origin

import (
	"bytes"
	"crypto/rand"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/internal/httpmsg"
	"segorigin/ranges"
)

// plan is one request in the making and then its answer, in the form
// every engine renders. The status line, header fields and any small body
// (errors) are in ctx.Response: fasthttp's ResponseHeader is the one place
// fields are kept and rendered, so every engine puts the same bytes on the
// wire. A body taken from a file is described here, and only here: the
// engine decides how its bytes reach the socket.
//
// Between resolve and the final plan, p carries what the file steps
// (fileSteps) found so far, so that a request suspended on an event loop
// resumes where it stopped.
type plan struct {
	kind kind // what was asked for, for counting and latency

	// h is the file being answered and then the file whose bytes are the
	// body; nil when ctx.Response holds the whole answer (errors, 304,
	// HEAD, empty bodies). The steps never release it: advance does when
	// a step answers, and whoever renders a final plan with a body does,
	// exactly once.
	h     *cache.Handle
	spans []ranges.Span     // the spans of h to send, in order; one unless mp != nil
	mp    *ranges.Multipart // multipart/byteranges framing of the spans, or nil
	total int64             // Content-Length: every byte the engine must send

	// noBlock asks the file steps to do no I/O that can block (an open,
	// a stat, waiting for storage): an event loop thread must not wait on
	// a disk. A step that would have to suspends, and advance returns
	// with wouldBlock set for the engine to call it again where blocking
	// is allowed.
	noBlock, wouldBlock bool
	// resident: the cold path found the body's first window in the page
	// cache just now (beforeBody), so its first send need not ask again.
	resident bool

	// The request, as resolve left it: its header fields, its name in
	// the cache and what authorized it.
	rh   reqHeaders
	name reqName
	g    grant

	// What the steps found: the next step to run, the file's validators,
	// change time, content validator and media type, the Range's spans.
	step          fileStep
	opened        bool // this request opened the file (a cache miss): the settle rule asks the kernel about writers
	v             validators
	changed       int64
	content       *cache.Content
	mt            mediaType
	rangesIgnored bool
	gzip          bool // h is the file's precompressed sibling (gzip.go)

	// client is the address p counts against -max-conns-per-ip while
	// holds (holdClient, releaseClient).
	client netip.Addr
	holds  bool

	// inProgress: the file is still being written and its bytes go out
	// with no-store (-in-progress uncached); counted when the plan is
	// final, with the file's size then.
	inProgress     bool
	inProgressSize int64

	live liveState // Low-Latency HLS delivery directives (live.go)

	// grow: h is still being written in a live directory and is streamed
	// as it grows, for as long as it grows within growStall (grow.go).
	grow      bool
	growStall time.Duration

	spanBuf [4]ranges.Span
}

// handler is the request path every engine drives: a parsed request is
// resolved (the message, the method, the path, admission), its file
// answered by the file steps, and its body handed to the engine or the
// body stream, then recorded. It owns the request path's pools; the rest
// it takes from New, read only: the configuration, the subsystems it
// consults and the counters it counts into. It never listens, accepts or
// starts a goroutine of its own.
type handler struct {
	cfg   *Config
	log   *slog.Logger
	stats *counters
	resp  *responder
	rec   *recorder
	pol   *policies // the request policy in force, pinned by each request (resolve)
	admit *admission
	files *files
	cache *cache.Cache
	cold  *coldPath // nil when -cold-readers is 0
	live  *liveWaits

	fasthttpLog *fasthttpLogger // fasthttp's own lines, rate limited (Server's)

	bufPool    *sync.Pool // *[]byte copy buffers for the userspace body path (Server's)
	streamPool sync.Pool  // *bodyStream
	planPool   sync.Pool  // *plan
	pathPool   sync.Pool  // *pathBuf: the cache key of a request, see route
}

// newHandler is the request path over s's subsystems, once every one is
// built.
func newHandler(s *Server) *handler {
	q := &handler{cfg: &s.cfg, log: s.log, stats: &s.stats, resp: s.resp, rec: &s.rec, pol: &s.pol, admit: s.admit,
		files: s.files, cache: s.cache, cold: s.cold, live: s.live, bufPool: &s.bufPool,
		fasthttpLog: s.fasthttpLog}
	q.streamPool.New = func() any { return new(bodyStream) }
	q.planPool.New = func() any { return new(plan) }
	q.pathPool.New = func() any { return new(pathBuf) }
	return q
}

// handle is the fasthttp request handler: the request becomes a plan, and a
// file body becomes the body stream that the transport sends. A streamed
// response is recorded (latency, access log) by the stream's Close, every
// other one here.
func (q *handler) handle(ctx *fasthttp.RequestCtx) {
	// Pooled: spans points into spanBuf, so a plan on the stack would
	// move to the heap, one allocation per request.
	p := q.planPool.Get().(*plan)
	q.route(ctx, p)
	if p.h == nil {
		q.admit.releaseClient(p)
		q.finishNoStream(ctx, p.kind)
	} else {
		q.attachBody(ctx, p) // the body stream's Close releases the client's count
	}
	*p = plan{}
	q.planPool.Put(p)
}

// route answers the request into p.
func (q *handler) route(ctx *fasthttp.RequestCtx, p *plan) {
	// The cache key lives in a pooled buffer, not a new string: a
	// request allocates nothing. The reqName over it ends when route
	// returns (see reqName).
	sp := q.pathPool.Get().(*pathBuf)
	defer q.putPath(sp)
	var ok bool
	if p.name, p.g, ok = q.resolve(ctx, &p.rh, sp); !ok || !q.admit.holdClient(ctx, p) {
		p.kind = kindOther
		return
	}
	q.files.advance(ctx, p)
}

// resolve runs the steps of a request that need no file: the message
// checks, the method, the path (decoded into sp) and authorization. ok
// false: ctx.Response holds the answer.
func (q *handler) resolve(ctx *fasthttp.RequestCtx, rh *reqHeaders, sp *pathBuf) (name reqName, g grant, ok bool) {
	q.stats.Requests.Add(1)
	q.pol.pin(ctx) // every setting a reload changes, read from one policy
	rh.scan(&ctx.Request.Header)
	// Every response: a browser must never guess a media or playlist
	// response to be HTML or script (an uploaded .txt, a .json manifest).
	ctx.Response.Header.SetCanonical(hdrNoSniff, valNoSniff)
	q.resp.setCORS(ctx, rh.origin)
	if err := checkMessage(&ctx.Request.Header, rh); err != nil {
		// The message itself is not one we can answer; what follows it
		// on the connection cannot be trusted either.
		ctx.SetConnectionClose()
		q.resp.fail(ctx, err)
		return name, g, false
	}
	if !q.admit.admitted(ctx) { // nginx's access phase: every method
		return name, g, false
	}
	switch {
	case ctx.IsGet(), ctx.IsHead():
	case ctx.IsOptions():
		q.resp.options(ctx)
		return name, g, false
	case isKnownMethod(ctx.Method()):
		// RFC 9110 §15.5.6: "The origin server MUST generate an Allow
		// header field in a 405 response".
		ctx.Response.Header.Set("Allow", corsAllowMethods)
		q.resp.fail(ctx, errMethod)
		return name, g, false
	default:
		// RFC 9110 §9.1: "An origin server that receives a request method
		// that is unrecognized or not implemented SHOULD respond with the
		// 501 (Not Implemented) status code."
		q.resp.fail(ctx, errNotImplemented)
		return name, g, false
	}
	q.countCMCD(ctx, rh)
	raw := ctx.URI().PathOriginal()
	if len(raw) == 0 {
		// Absolute-form with an empty path ("GET http://host?q"): fasthttp
		// leaves the path empty. RFC 9112 §3.2.2: "If the target URI's
		// path component is empty, the client MUST send "/" as the path
		// within the origin-form", and §3.2.1 says the server MUST accept
		// the absolute-form: its path is "/".
		raw = slash
	}
	key, err := cleanPathInto(sp.b[:0], raw)
	name = sp.name(key)
	if err == nil && !q.cfg.ServeDotfiles && hiddenSegment(name.view()) {
		err = errHiddenPath
	}
	if err != nil {
		q.resp.fail(ctx, err)
		return name, g, false
	}
	return q.admit.authorize(ctx, name)
}

var slash = []byte("/")

// checkMessage refuses a request whose version or header section this
// server does not accept, whatever its method and target.
func checkMessage(h *fasthttp.RequestHeader, rh *reqHeaders) error {
	// fasthttp accepts any "HTTP/d.d". RFC 9110 §15.6.6: 505 "indicates
	// that the server does not support, or refuses to support, the major
	// version of HTTP that was used in the request message". A higher
	// minor version of HTTP/1 is served: §2.5, a recipient "SHOULD
	// process the message as if it were in the highest minor version
	// within that major version to which the recipient is conformant".
	if p := h.Protocol(); len(p) != len("HTTP/1.1") || string(p[:len("HTTP/1.")]) != "HTTP/1." {
		return errVersion
	}
	// fasthttp accepts a space inside a field name ("X A: v"). RFC 9110
	// §5.1: field-name = token, and a space is no tchar; RFC 9112 §5
	// requires 400 for whitespace before the colon, which fasthttp
	// refuses itself.
	if rh.badFieldName {
		return errFieldName
	}
	// fasthttp joins a folded line into the field above it; the raw block
	// still holds the fold. See httpmsg.HasObsFold for why it is refused.
	if httpmsg.HasObsFold(h.RawHeaders()) {
		return errObsFold
	}
	if err := checkTransferCoding(h); err != nil {
		return err
	}
	return checkHost(h)
}

// checkTransferCoding: fasthttp takes "Transfer-Encoding: identity" for
// no coding at all and drops the field. RFC 9112 §6.3: "If a
// Transfer-Encoding header field is present in a request and the chunked
// transfer coding is not the final encoding, the message body length
// cannot be determined reliably; the server MUST respond with the 400
// (Bad Request) status code and then close the connection." (fasthttp
// itself refuses any other coding and a second field line.) The loop
// engine asks before it waits for a body, whose length is then unknown.
func checkTransferCoding(h *fasthttp.RequestHeader) error {
	if te, ok := httpmsg.FieldValue(h.RawHeaders(), "Transfer-Encoding"); ok && !bytes.EqualFold(te, chunked) {
		return errTransferCoding
	}
	return nil
}

var chunked = []byte("chunked")

// checkHost: RFC 9112 §3.2, a request whose Host has an invalid value
// gets 400; with an absolute-form target the Host field is ignored for the
// target's authority (§3.2.2), which must itself be valid: not empty
// (RFC 9110 §4.2.1 "MUST reject"), no userinfo (§4.2.4). A missing Host
// on HTTP/1.1 is refused by fasthttp itself.
func checkHost(h *fasthttp.RequestHeader) error {
	if !httpmsg.ValidHost(h.Host()) {
		return errHost
	}
	if a, abs := httpmsg.AbsoluteAuthority(h.RequestURI()); abs && !httpmsg.ValidAuthority(a) {
		return errHost
	}
	return nil
}

// persistLaterMinor undoes fasthttp's close for a later minor version of
// HTTP/1. fasthttp takes every version but HTTP/1.1 for HTTP/1.0, whose
// connections close unless the client asks to keep them; RFC 9110 §2.5
// serves a later minor version as HTTP/1.1, persistent unless the client
// sent "close" (RFC 9112 §9.3). A chunked request keeps the close
// fasthttp decided (it also stands for Transfer-Encoding beside
// Content-Length). Both engines call it as soon as the header is parsed,
// before the connection's fate is read from it.
//
// It also keeps an HTTP/1.0 connection whose keep-alive is on a later
// Connection field line than the first: fasthttp reads only the first,
// and RFC 9110 §5.3 makes the lines one list.
func persistLaterMinor(h *fasthttp.RequestHeader) {
	p := h.Protocol()
	if len(p) != len("HTTP/1.1") || string(p[:len("HTTP/1.")]) != "HTTP/1." ||
		!h.ConnectionClose() || h.ContentLength() == -1 || httpmsg.AsksClose(h.RawHeaders()) {
		return
	}
	if p[len("HTTP/1.")] >= '2' || (p[len("HTTP/1.")] == '0' && httpmsg.AsksKeepAlive(h.RawHeaders())) {
		h.ResetConnectionClose()
	}
}

// isKnownMethod reports whether m is a method RFC 9110 §9.3 (or PATCH,
// RFC 5789) defines that this server recognises but does not allow on any
// resource: those get 405, any other method 501.
func isKnownMethod(m []byte) bool {
	switch string(m) {
	case "POST", "PUT", "DELETE", "CONNECT", "TRACE", "PATCH":
		return true
	}
	return false
}

// setValidators writes the headers a 200, 206 and 304 share: RFC 9110
// §15.4.5 says a 304 carries the ETag, Cache-Control and Date the 200 would.
// A token's grant caps the Cache-Control lifetime (capCacheControl); a
// file still being written (uncached) gets no-store.
func (rs *responder) setValidators(ctx *fasthttp.RequestCtx, k kind, v validators, g grant, uncached bool) {
	hdr := &ctx.Response.Header
	hdr.SetCanonical(hdrETag, []byte(v.etag)) // short: converted on the stack
	if v.lastMod != "" {
		hdr.SetCanonical(hdrLastModified, []byte(v.lastMod)) // short: converted on the stack
	} else {
		hdr.SetLastModified(v.modTime)
	}
	tab := rs.tab(ctx)
	cc := tab.cacheControl[k]
	if uncached {
		cc = valNoStore
	} else if g.until != 0 {
		var buf [160]byte
		cc = capCacheControl(buf[:0], cc, g.until-rs.now().Unix(), g.private)
	}
	if len(cc) > 0 {
		hdr.SetCanonical(hdrCacheControl, cc)
	}
	rs.addOperatorHeaders(hdr, tab.extraHeaders[k])
}

// Response header names in the form fasthttp's Set would normalise them to
// ("ETag" becomes "Etag"), for SetCanonical: Set copies and normalises the
// name on every call, which made up a quarter of the handler's time on a
// cache hit. The bytes on the wire are the same.
var (
	hdrAcceptRanges  = []byte("Accept-Ranges")
	hdrContentRange  = []byte("Content-Range")
	hdrETag          = []byte("Etag")
	hdrLastModified  = []byte("Last-Modified")
	hdrCacheControl  = []byte("Cache-Control")
	hdrAllowOrigin   = []byte("Access-Control-Allow-Origin")
	hdrExposeHeaders = []byte("Access-Control-Expose-Headers")
	hdrAllowCreds    = []byte("Access-Control-Allow-Credentials")
	hdrTimingAllow   = []byte("Timing-Allow-Origin")
	hdrNoSniff       = []byte("X-Content-Type-Options")

	valBytes         = []byte("bytes")
	valAnyOrigin     = []byte("*")
	valExposeHeaders = []byte(corsExposeHeaders)
	valTrue          = []byte("true")
	valNoSniff       = []byte("nosniff")
)

// cacheControlValues is the Cache-Control value by kind (nil: none).
func cacheControlValues(cfg Config) [3][]byte {
	var cc [3][]byte
	for k, v := range [3]string{
		kindOther:    cfg.CacheControlOther,
		kindPlaylist: cfg.CacheControlPlaylist,
		kindSegment:  cfg.CacheControlSegment,
	} {
		if v != "" {
			cc[k] = []byte(v)
		}
	}
	return cc
}

// boundary returns a fresh multipart boundary. Random, so that no file's
// content can forge a part delimiter.
func (rs *responder) boundary() string {
	b, err := ranges.NewBoundary(rand.Reader)
	if err != nil {
		// crypto/rand does not fail on Linux; if it ever does, a
		// counter-based boundary is still unique per response.
		return "segorigin-" + strconv.FormatInt(rs.st.Multipart.Load(), 36)
	}
	return b
}
