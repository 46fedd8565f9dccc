package origin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/rewrite"
	"segorigin/origin/token"
	"segorigin/ranges"
)

// defaultQueryRewriteMax is -auth-query-rewrite-max-bytes' default: far
// above any VOD playlist or manifest (a two-hour HLS media playlist of 2 s
// segments is about 150 KiB), low enough that a request cannot make the
// server hold much memory for it.
const defaultQueryRewriteMax = 1 << 20

// RewriteCounters count what became of playlists and manifests answered
// to a query token with Auth.QueryRewrite on.
type RewriteCounters[C any] struct {
	Rewritten C // served with the token written into their URIs
	Unchanged C // no URI needed it (none listed, or none in scope): the file as it is
	TooLarge  C // over -auth-query-rewrite-max-bytes: served unrewritten
	Failed    C // not a playlist or manifest the rewriter could read: served unrewritten
}

// queryGrant is what a query-carried token gives the rewrite: the token
// as the query held it (decoded; it aliases the request's arguments, so
// it lives as long as the request) or, for secure_link, its expiry.
type queryGrant struct {
	tok        []byte    // EdgeAuth-shape token from the query carrier
	link       bool      // a secure_link opened the document
	linkExpiry time.Time // secure_link: expires= of the request; zero for none
}

// rewrites reports whether documents are rewritten for this grant.
func (q queryGrant) rewrites() bool { return q.tok != nil || q.link }

// rewriteFormat says how name's bytes are rewritten: HLS for .m3u8, DASH
// for .mpd, nil for anything else.
func rewriteFormat(name string) func(dst, src []byte, t *rewrite.Target) ([]byte, rewrite.Result, error) {
	switch {
	case strings.HasSuffix(name, ".m3u8"):
		return rewrite.HLS
	case strings.HasSuffix(name, ".mpd"):
		return rewrite.DASH
	}
	return nil
}

// serveRewritten answers GET or HEAD of a playlist or manifest authorised
// by a query token with the token written into every URI it lists that
// the token opens. It goes on (stepNext) when the file is to be served as
// it is (too large, unreadable as a playlist, or nothing to rewrite:
// counted); it suspends, having counted nothing, when the file must be
// read and blocking is not allowed.
func (f *files) serveRewritten(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	h, g := p.h, p.g
	name := h.Name
	a := f.pol.of(ctx).auth
	format := rewriteFormat(name)
	if a == nil || format == nil {
		return stepNext
	}
	st := &f.stats.Rewrite
	limit := a.cfg.QueryRewriteMaxBytes
	if h.Size > limit {
		st.TooLarge.Add(1)
		return stepNext
	}
	src := h.Bytes
	if src == nil && h.Size > 0 {
		// Not inlined: read it where blocking is allowed.
		if p.noBlock {
			return stepSuspend
		}
		var err error
		if src, err = f.readWhole(h); err != nil {
			f.resp.fail(ctx, err)
			return stepAnswered
		}
	}
	t := a.rewriteTarget(ctx, name, g.query, f.clientID.ip(ctx), int(limit)*2, f.now())
	bp := a.outPool.Get().(*[]byte)
	defer a.outPool.Put(bp)
	out, res, err := format((*bp)[:0], src, t)
	*bp = out[:0] // keep what it grew to
	switch {
	case errors.Is(err, rewrite.ErrTooLarge):
		st.TooLarge.Add(1)
		return stepNext
	case err != nil:
		st.Failed.Add(1)
		return stepNext
	case res.Rewritten == 0:
		st.Unchanged.Add(1)
		return stepNext
	}
	st.Rewritten.Add(1)
	return f.serveMemory(ctx, p, validators{etag: rewrittenETag(h.ETag, out)}, out, false)
}

// serveMemory answers GET or HEAD of p's file with body, made from the
// file's bytes in memory (rewritten for a token, a delta update, or
// gzip-compressed when gzip is set), whose validators are v: 304 or 412 by the preconditions,
// or 200 with the whole body. A Range header is ignored (RFC 9110 §14.2:
// "A server MAY ignore the Range header field"): the body is made, not
// stored, and players fetch playlists whole; no Accept-Ranges is sent
// for it.
func (f *files) serveMemory(ctx *fasthttp.RequestCtx, p *plan, v validators, body []byte, gzip bool) stepResult {
	h, g, mt := p.h, p.g, p.mt
	if f.ra != nil && ctx.IsGet() {
		f.ra.served(ctx, h.Name, mt.kind, h, ranges.Span{Start: 0, Length: h.Size}, true, g)
	}
	if v.modTime.IsZero() {
		f.dates.fileValidators(&v, h)
	}
	switch evaluatePreconditions(&p.rh, v) {
	case notModified:
		f.resp.setValidators(ctx, mt.kind, v, g, false)
		f.lv.liveCacheControl(ctx, p)
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		f.stats.Kinds[mt.kind].Add(1)
		return stepAnswered
	case preconditionFailed:
		f.resp.fail(ctx, errPrecondition)
		return stepAnswered
	}
	f.resp.setValidators(ctx, mt.kind, v, g, false)
	f.lv.liveCacheControl(ctx, p)
	f.stats.Kinds[mt.kind].Add(1)
	ctx.Response.Header.SetContentType(mt.contentType)
	if gzip {
		ctx.Response.Header.SetCanonical(hdrContentEncoding, valGzip)
		f.stats.Gzip.Compressed.Add(1)
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	if ctx.IsHead() {
		ctx.Response.Header.SetContentLength(len(body))
		return stepAnswered
	}
	ctx.Response.SetBody(body)
	return stepAnswered
}

// readWhole reads a file that the cache did not inline, after making it
// resident through the cold readers when the cold path is on (so a
// request's read waits for storage only there).
func (f *files) readWhole(h *cache.Handle) ([]byte, error) {
	if f.cold != nil {
		if _, err := f.cold.ensureResident(h.Name, kindPlaylist, h, ranges.Span{Start: 0, Length: h.Size}); err != nil {
			return nil, err
		}
	}
	b := make([]byte, h.Size)
	n, err := h.File.ReadAt(b, 0)
	if n == len(b) {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // shrank since it was opened
	}
	return nil, fmt.Errorf("origin: reading %s to rewrite it: %w", h.Name, err)
}

// rewrittenETag derives a rewritten body's entity tag from the file's and
// the body: it differs from the file's (the bytes differ), and is the same
// for the same file and token (the rewrite is a pure function of them and
// the configuration, whatever the request's Host), as a strong validator
// must be (RFC 9110 §8.8.1).
func rewrittenETag(fileETag string, body []byte) string {
	sum := sha256.Sum256(body)
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(fileETag, `"`))
	b.WriteString("-q")
	b.WriteString(hex.EncodeToString(sum[:8]))
	b.WriteByte('"')
	return b.String()
}

// rewriteTarget says what each URI of name's document gets, so that
// every URI the document hands a player carries a credential the origin
// accepts for it:
//
//   - with EdgeAuth-shape tokens, the token itself for the paths its ACL
//     opens; under the document's scope (see docScope), the scope
//     credential for the rest; a key outside it, a credential for that
//     key alone;
//   - with secure_link, whose hash covers one URI, a fresh md5= and
//     expires= for each URI under the scope and each key, with the
//     request's expiry; a DASH template, which no link can sign, the
//     scope credential.
//
// Neither the time nor the reach grows past the request's credential and
// the presentation the document describes.
func (a *authorizer) rewriteTarget(ctx *fasthttp.RequestCtx, name string, qg queryGrant, ip string, maxOut int, now time.Time) *rewrite.Target {
	scheme := "http"
	if ctx.IsTLS() {
		scheme = "https"
	}
	// No host in the base: the request's Host is the client's to choose,
	// so a URI naming it is ours only if QueryRewriteHosts lists it.
	t := &rewrite.Target{
		Base:   &url.URL{Scheme: scheme, Path: "/" + name},
		Hosts:  a.cfg.QueryRewriteHosts,
		MaxOut: maxOut,
	}
	if qg.link {
		bind := ""
		if a.link.UsesRemoteAddr() {
			bind = ip
		}
		a.linkTarget(t, a.linkRequest(ctx, "", ip), a.scope.forDocument(name, qg.linkExpiry, bind, now, nil), qg.linkExpiry,
			strings.HasSuffix(name, ".mpd"))
		return t
	}
	// The token's scope, the parameter and the scope credential are
	// made once per document, not per URI.
	// A token that opens trees (a prefix ACL, a scope credential) bounds
	// the scope credential to them; one that opens exact paths only (the
	// manifest's, or URL form) is widened to the scope, as a secure_link
	// is.
	own := token.ParseScope(qg.tok)
	var within func(string) bool
	if own.OpensTrees() {
		within = own.CoversTree
	}
	sc := a.scope.forDocument(name, own.Expiry(), own.IP(), now, within)
	param := append([]byte(a.cfg.QueryParam+"="), nil...)
	param = rewrite.AppendQueryValue(param, qg.tok)
	t.Names = []string{a.cfg.QueryParam}
	t.Param = func(dst []byte, p string, kind rewrite.Kind) ([]byte, bool) {
		switch {
		case own.Covers(p):
			return append(dst, param...), true
		case sc.covers(p):
			return append(dst, sc.param...), true
		case kind == rewrite.KindKey:
			return sc.appendExact(dst, p)
		}
		return dst, false
	}
	return t
}

// linkTarget sets t up for secure_link: each URI under the scope, and
// each key, gets a link signed for it with the request's expiry and the
// request's own fields (address, headers); the arguments the expression
// reads ($arg_*) are written beside the hash with the request's values. A
// template gets the scope credential, and so does every URI of a DASH
// manifest (dash) the scope credential covers: the manifest grants the
// scope already (its templates need it), and the credential is one query
// parameter, where a link's two are written "&amp;" in XML, which
// ffmpeg's DASH reader (5.1) takes for an entity and drops the BaseURL.
// Without a scope credential configured, they get links.
func (a *authorizer) linkTarget(t *rewrite.Target, req token.LinkRequest, sc docScope, expiry time.Time, dash bool) {
	hashArg, expiresArg := a.link.Names()
	t.Names = []string{hashArg}
	if expiresArg != "" {
		t.Names = append(t.Names, expiresArg)
	}
	if a.cfg.QueryParam != "" {
		t.Names = append(t.Names, a.cfg.QueryParam)
	}
	// The arguments as the request sent them, when each is plain query
	// text (no byte the documents would need escaped); otherwise no URI
	// gets a link, since the hash covers them.
	var args []byte
	for i, n := range a.link.Args() {
		v := req.Args[i]
		if v == nil {
			continue
		}
		if !plainQueryValue(v) {
			t.Param = func(dst []byte, _ string, _ rewrite.Kind) ([]byte, bool) { return dst, false }
			return
		}
		t.Names = append(t.Names, n)
		args = append(append(append(append(args, n...), '='), v...), '&')
	}
	t.Param = func(dst []byte, p string, kind rewrite.Kind) ([]byte, bool) {
		switch {
		case kind == rewrite.KindTemplate:
			return sc.appendScope(dst, p)
		case kind != rewrite.KindKey && !strings.HasPrefix(p, sc.dir):
			return dst, false
		case dash && kind == rewrite.KindURI:
			if out, ok := sc.appendScope(dst, p); ok {
				return out, true
			}
		}
		r := req
		r.URI = p
		hash, exp, err := a.link.Sign(r, expiry)
		if err != nil {
			return dst, false
		}
		dst = append(dst, args...)
		dst = append(append(append(dst, hashArg...), '='), hash...)
		if exp != "" {
			dst = append(append(append(append(dst, '&'), expiresArg...), '='), exp...)
		}
		return dst, true
	}
}

// plainQueryValue: RFC 3986 unreserved characters and percent escapes
// only, which a playlist line and an XML attribute hold as they are.
func plainQueryValue(v []byte) bool {
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~%", c) >= 0) {
			return false
		}
	}
	return true
}

// rewriteMetrics declares the query-token rewrite's metric.
func rewriteMetrics(t *table, st *RewriteStats) {
	m := t.counter("query_rewrite_total", "Playlists and manifests answered to a query token: rewritten (the token in every URI in its scope), unchanged (no URI needed it), too_large (over -auth-query-rewrite-max-bytes) and failed (unreadable as a playlist) are served as the file is.", "outcome")
	t.byLabel(m, map[string]int64{"rewritten": st.Rewritten, "unchanged": st.Unchanged, "too_large": st.TooLarge, "failed": st.Failed})
}
