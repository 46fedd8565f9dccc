package origin

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
	"sync"
	"sync/atomic"

	// klauspost/compress rather than compress/gzip: the same format and
	// API, 3-10x faster on a 130 KiB DASH manifest at its default level
	// (0.3 ms against 1-3 ms on the 2-core bench machine) for a ratio 2%
	// lower (8.5 against 8.7). A request waits for the compression of a
	// new version, so its time is latency; and it is fasthttp's own
	// dependency already, kept by its author.
	"github.com/klauspost/compress/gzip"
	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/coding"
)

// GzipMode says whether text answers (playlists, manifests, subtitles)
// go out gzip-compressed to clients that accept it (Config.Gzip).
type GzipMode string

const (
	// GzipOff: every answer is the file's bytes as they are.
	GzipOff GzipMode = "off"
	// GzipStatic: a precompressed sibling (name.gz, not older than the
	// file) is sent instead, as nginx's gzip_static does; nothing is
	// compressed by the server.
	GzipStatic GzipMode = "static"
	// GzipOn: the sibling when there is one, otherwise the file
	// compressed here, once per version of the file, and kept with its
	// cache entry.
	GzipOn GzipMode = "on"
)

// DefaultGzipTypes are -gzip-types' default: the text kinds a VOD origin
// serves. Media, images and keys are never listed: they are compressed
// already, or binary.
func DefaultGzipTypes() []string {
	return []string{
		"application/vnd.apple.mpegurl", "audio/mpegurl", "application/x-mpegurl", "application/dash+xml",
		"text/vtt", "application/ttml+xml", "application/x-subrip", "text/x-ssa",
		"application/json", "application/xml", "text/xml", "text/plain", "text/html", "text/css", "text/javascript",
	}
}

// Defaults of -gzip-min-length (nginx's gzip_min_length is 20; under a
// few hundred bytes gzip's 18 bytes of framing eat what it saves) and
// -gzip-max-bytes (the largest file compressed here: a two-hour HLS media
// playlist is about 150 KiB, a long DASH manifest a few hundred).
const (
	defaultGzipMinLength = 256
	defaultGzipMaxBytes  = 1 << 20
)

// GzipCounters count what gzip did.
type GzipCounters[C any] struct {
	Static     C // 200 answers with a precompressed name.gz (HEAD included)
	Compressed C // 200 answers with an encoding made here, kept with the entry or made for the request (HEAD included)
	Made       C // compressions done (about one per version of each file asked for compressed)
	TooLarge   C // answers sent as they are to a client accepting gzip: over -gzip-max-bytes, no sibling
	NotSmaller C // answers sent as they are to a client accepting gzip: compressed, it was no smaller
}

// gzipPolicy is what the gzip step needs: the mode, the Content-Type
// values it compresses and its limits, fixed at New.
type gzipPolicy struct {
	mode      GzipMode
	types     map[string]bool // Content-Type values of the type table (parameters included) answered compressed
	minLength int64
	maxBytes  int64
	st        *GzipCounters[atomic.Int64]
	writers   sync.Pool // *gzip.Writer
}

// newGzipPolicy resolves cfg's -gzip-types against the type table once,
// so a request looks its Content-Type up in a map.
func newGzipPolicy(cfg Config, types map[string]mediaType, st *GzipCounters[atomic.Int64]) *gzipPolicy {
	gz := &gzipPolicy{mode: cfg.Gzip, types: map[string]bool{}, minLength: cfg.GzipMinLength, maxBytes: cfg.GzipMaxBytes, st: st}
	listed := map[string]bool{}
	for _, t := range cfg.GzipTypes {
		listed[strings.ToLower(t)] = true
	}
	for _, mt := range types {
		if base, _, err := mime.ParseMediaType(mt.contentType); err == nil && listed[base] {
			gz.types[mt.contentType] = true
		}
	}
	return gz
}

// checkGzipTypes refuses a -gzip-types entry that is not a bare media
// type, or that names media: those are compressed already, and never
// compressed again (a segment is also fetched by Range, which gzip
// would break).
func checkGzipTypes(types []string) error {
	for _, t := range types {
		base, params, err := mime.ParseMediaType(t)
		switch {
		case err != nil || len(params) > 0 || !strings.Contains(base, "/"):
			return fmt.Errorf("gzip-types: %q is not a media type without parameters", t)
		case strings.HasPrefix(base, "video/"), strings.HasPrefix(base, "audio/") && base != "audio/mpegurl",
			strings.HasPrefix(base, "image/"):
			return fmt.Errorf("gzip-types: %q is media, compressed already", t)
		}
	}
	return nil
}

var (
	hdrVary            = []byte("Vary")
	hdrContentEncoding = []byte("Content-Encoding")
	valAcceptEncoding  = []byte("Accept-Encoding")
	valGzip            = []byte("gzip")
)

// stepGzip chooses the content coding of a file of a type -gzip-types
// lists: gzip when the client accepts it (origin/coding) and nothing
// rules it out, identity otherwise. Every such answer, compressed or not,
// says Vary: Accept-Encoding (RFC 9110 §12.5.5: the choice depended on
// it). A Range request gets identity (ranges of a representation
// compressed on demand would not be stable), and so does a file still
// being written. The gzip answer has its own entity tag, so a
// precondition (If-None-Match) is evaluated against the representation it
// names (RFC 9110 §8.8.3: a strong validator differs between encodings).
// The precompressed sibling goes on through the later steps as the body's
// file; a body compressed here is answered from memory.
func (f *files) stepGzip(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	gz := f.pol.of(ctx).gz
	if gz.mode == GzipOff || p.inProgress || !gz.types[p.mt.contentType] {
		return stepNext
	}
	if (ctx.IsGet() && len(p.rh.rng) > 0) || p.h.Size < gz.minLength ||
		!acceptsGzip(ctx, &p.rh) {
		varyAcceptEncoding(ctx)
		return stepNext
	}
	sib, res := f.gzipSibling(p)
	if res == stepSuspend {
		return stepSuspend
	}
	if sib != nil {
		varyAcceptEncoding(ctx)
		p.h.Release()
		p.h, p.gzip = sib, true
		p.v.etag = gzipETag(sib.ETag)
		f.dates.fileValidators(&p.v, sib)
		return stepNext
	}
	if gz.mode != GzipOn {
		varyAcceptEncoding(ctx)
		return stepNext
	}
	if p.h.Size > gz.maxBytes {
		gz.st.TooLarge.Add(1)
		varyAcceptEncoding(ctx)
		return stepNext
	}
	return f.serveCompressed(ctx, p)
}

// acceptsGzip is coding.Gzip of the request's Accept-Encoding lines, as
// scan found them: the header is walked again only for more than one.
func acceptsGzip(ctx *fasthttp.RequestCtx, rh *reqHeaders) bool {
	switch rh.acceptEncodingLines {
	case 0:
		return false
	case 1:
		return coding.Gzip([][]byte{rh.acceptEncoding})
	}
	return coding.Gzip(ctx.Request.Header.PeekAll(fasthttp.HeaderAcceptEncoding))
}

// varyAcceptEncoding adds Vary: Accept-Encoding as a line of its own
// beside any other (CORS's Vary: Origin; RFC 9110 §5.3: lines of a list
// field combine). Called once per answer: never before a step suspends.
func varyAcceptEncoding(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.AddBytesKV(hdrVary, valAcceptEncoding)
}

// gzipSibling is the precompressed name.gz of p's file, when there is one
// to send: complete (the settle rule) and not older than the file (an
// older one may be of an earlier version). Missing, older, unreadable:
// nil, and the file itself is answered.
func (f *files) gzipSibling(p *plan) (*cache.Handle, stepResult) {
	name := p.h.Name + ".gz"
	var sib *cache.Handle
	var outcome cache.Outcome
	var err error
	if p.noBlock {
		var ready bool
		if sib, outcome, err, ready = f.cache.TryAcquire(name); !ready {
			return nil, stepSuspend
		}
	} else {
		sib, outcome, err = f.cache.AcquireOutcome(name)
	}
	if err != nil {
		return nil, stepNext
	}
	if sib.ModTime.Before(p.h.ModTime) || sib.Size == 0 {
		sib.Release()
		return nil, stepNext
	}
	// Opened now (a miss): settled by its dates, it may still have a
	// writer that paused; the kernel's word decides, as for the file.
	if f.pub.inProgress(sib, sib.ChangeTime(), outcome == cache.Miss) {
		// Still being written (gzip -k writes it in place): dropped from
		// the cache, so the finished one is opened again.
		f.pub.drop(sib.Name)
		sib.Release()
		return nil, stepNext
	}
	return sib, stepNext
}

// serveCompressed answers with p's file compressed: the encoding kept
// with its cache entry, or made now (where blocking is allowed: it reads
// the file when the cache did not inline it, and compressing is the
// loop's time otherwise) and kept when the inline budget has room.
func (f *files) serveCompressed(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	gz, h := f.pol.of(ctx).gz, p.h
	e := h.Encoded()
	if e == nil {
		if p.noBlock {
			return stepSuspend
		}
		src := h.Bytes
		if src == nil {
			var err error
			if src, err = f.readWhole(h); err != nil {
				f.resp.fail(ctx, err)
				return stepAnswered
			}
		}
		e = gz.encode(src)
		h.SetEncoded(e)
	}
	varyAcceptEncoding(ctx)
	if e.Bytes == nil {
		gz.st.NotSmaller.Add(1)
		return stepNext
	}
	v := p.v
	v.etag = gzipETag(p.v.etag)
	return f.serveMemory(ctx, p, v, e.Bytes, true)
}

// encode compresses src; Bytes is nil when that is no smaller.
func (gz *gzipPolicy) encode(src []byte) *cache.Encoded {
	gz.st.Made.Add(1)
	var buf bytes.Buffer
	buf.Grow(len(src)/4 + 64)
	w, _ := gz.writers.Get().(*gzip.Writer)
	if w == nil {
		// The default level (6): compressed once per version of a file,
		// the ratio is worth more than the time (docs/benchmarks.md).
		w = gzip.NewWriter(&buf)
	} else {
		w.Reset(&buf)
	}
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(src)
	_ = w.Close()
	gz.writers.Put(w)
	if buf.Len() >= len(src) {
		return &cache.Encoded{}
	}
	return &cache.Encoded{Bytes: buf.Bytes()}
}

// gzipETag is the entity tag of the gzip encoding of the representation
// tagged etag: the same opaque tag with "-gz" inside the quotes, so a
// cache keeps both encodings apart and an If-None-Match names one.
func gzipETag(etag string) string {
	return strings.TrimSuffix(etag, `"`) + `-gz"`
}

// gzipHeader marks a body of the precompressed sibling (stepRespond).
func (f *files) gzipHeader(ctx *fasthttp.RequestCtx, p *plan) {
	if p.gzip {
		ctx.Response.Header.SetCanonical(hdrContentEncoding, valGzip)
		f.stats.Gzip.Static.Add(1)
	}
}

// gzipMetrics declares gzip's metrics.
func gzipMetrics(t *table, st *GzipCounters[int64]) {
	m := t.counter("gzip_responses_total", "Answers (200, HEAD included) sent gzip-compressed to clients that accept it: static (a precompressed name.gz) or compressed (compressed here once per version of the file, kept with its cache entry).", "source")
	t.byLabel(m, map[string]int64{"static": st.Static, "compressed": st.Compressed})
	t.one("gzip_compressions_total", "Files compressed by the server (-gzip on): about one per version of each text file asked for compressed.", st.Made)
	m = t.counter("gzip_identity_total", "Answers sent uncompressed to a client accepting gzip for a type -gzip-types lists: too_large (over -gzip-max-bytes, no name.gz) or not_smaller (compressed, it was no smaller).", "reason")
	t.byLabel(m, map[string]int64{"too_large": st.TooLarge, "not_smaller": st.NotSmaller})
}
