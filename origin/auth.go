package origin

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/internal/httpmsg"
	"segorigin/origin/token"
)

// AuthConfig turns on signed-URL authorization. A token may travel in any of
// the enabled carriers; the path carrier is the one players keep, because
// relative URLs in a playlist inherit it.
type AuthConfig struct {
	// Keys verifies EdgeAuth-shape tokens (the default scheme). nil with
	// SecureLinkSecret empty: authorization off.
	Keys *token.Keyring
	// Skew is the clock skew allowed on st= and exp= (DefaultConfig:
	// token.DefaultSkew); 0 allows none.
	Skew time.Duration
	// PathPrefix is the path carrier: /<prefix>/<token segment>/<path>
	// ("t" gives /t/<segment>/vod/title42/master.m3u8). Empty disables it.
	PathPrefix string
	// QueryParam names the query carrier (?token=...). Empty disables it.
	QueryParam string
	// Cookie names the cookie carrier. Empty disables it.
	Cookie string
	// Bearer accepts "Authorization: Bearer <token>".
	Bearer bool
	// Public lists path prefixes served without a token. A prefix matches
	// whole path segments: "/public" (or "/public/") covers /public and
	// everything under /public/, never /publicity.txt.
	Public []string
	// MissingStatus answers a request with no token at all: 401 (with
	// WWW-Authenticate; DefaultConfig's) or 403.
	MissingStatus int

	// QueryRewrite writes a query-carried token into every URI of the
	// playlists and manifests it authorises (HLS URI lines and URI
	// attributes, DASH BaseURL and segment URLs), so that players keep
	// sending it: a relative URI resolves without the playlist's query
	// (RFC 3986 §5.2.2). Relative references get it; an absolute or
	// scheme-relative URI only on a host in QueryRewriteHosts, never
	// because it names the request's Host (which the client chose). A
	// URI outside the token's scope, or on any other host, is left as it
	// is.
	// With secure_link, each URI under the document's directory gets its
	// own md5= and expires=, with the request's expiry. Where the
	// request's credential cannot serve (a DASH SegmentTemplate; a URI
	// outside an exact-path token) the document hands out a scope
	// credential (see RewriteScope); a key outside the scope is signed
	// for itself.
	QueryRewrite bool
	// QueryRewriteMaxBytes: a playlist or manifest larger than this is
	// served unrewritten (counted); 0 means 1 MiB.
	QueryRewriteMaxBytes int64
	// QueryRewriteHosts are the hosts (host or host:port, compared
	// without case; a host without a port also matches its scheme's
	// default port) whose absolute and scheme-relative URIs in a document
	// get the token: this origin's own names, a CDN hostname for the same
	// paths. Empty (the default): only relative URIs get it.
	QueryRewriteHosts []string
	// RewriteScope is how many directory levels above a playlist's or
	// manifest's own directory its scope credential reaches: the
	// credential a rewritten document hands out where the player's own
	// cannot serve (a DASH SegmentTemplate, which stands for many paths;
	// a URI outside an exact-path token or a secure_link's one URI). 0
	// (DefaultConfig): the document's directory; 1 its parent, for a
	// title laid out as /vod/title42/{hls,dash}/. Keys (EXT-X-KEY,
	// EXT-X-SESSION-KEY) outside it are signed one by one.
	RewriteScope int

	// CacheLifetime is how long a response a token authorised may be
	// kept by caches: CacheLifetimeToken (DefaultConfig) caps
	// Cache-Control at the token's remaining life; CacheLifetimeConfigured
	// keeps the kind's Cache-Control as configured, for a CDN that checks
	// tokens itself or keys its cache without them. A token in a cookie or
	// Authorization header is capped and private either way.
	CacheLifetime string

	// SecureLinkSecret selects the nginx secure_link scheme instead (for
	// migrations): ?md5=<hash>&expires=<unix> in the query, checked with
	// SecureLinkExpression (DefaultConfig: "$secure_link_expires$uri$remote_addr $secret";
	// token.SecureLinkConfig lists its variables).
	SecureLinkSecret     string
	SecureLinkExpression string
	// SecureLinkArgs names the hash and expiry arguments as nginx's
	// secure_link directive does: "md5,expires" (DefaultConfig), or
	// "$arg_st,$arg_e" as written there; one name alone ("md5") is the
	// form without expiry.
	SecureLinkArgs string
	// SecureLinkLocation is a regular expression (RE2) the path must
	// match, whose captures the expression reads as $1..$9: nginx's
	// `location ~ regex` around the secure_link directives. Empty: none.
	SecureLinkLocation string
	// SecureLinkExpiredStatus answers an authentic but expired link: 403
	// (DefaultConfig; nginx's `if ($secure_link = "") { return 403; }`
	// alone does that) or 410 (`if ($secure_link = "0") { return 410; }`).
	SecureLinkExpiredStatus int
}

// The values of AuthConfig.CacheLifetime.
const (
	CacheLifetimeToken      = "token"
	CacheLifetimeConfigured = "configured"
)

// checkTokens checks the settings that do not depend on a key or secret,
// naming each flag: newAuthorizer (reloads too) and the settings check
// both run it.
func (a *AuthConfig) checkTokens() error {
	var errs []error
	if l := a.CacheLifetime; l != CacheLifetimeToken && l != CacheLifetimeConfigured {
		errs = append(errs, fmt.Errorf("-auth-cache-lifetime %q: want %s or %s", l, CacheLifetimeToken, CacheLifetimeConfigured))
	}
	if s := a.SecureLinkExpiredStatus; s != fasthttp.StatusForbidden && s != fasthttp.StatusGone {
		errs = append(errs, fmt.Errorf("-auth-securelink-expired-status %d: want 403 or 410", s))
	}
	if a.RewriteScope < 0 || a.RewriteScope > maxRewriteScope {
		errs = append(errs, fmt.Errorf("-auth-rewrite-scope %d: want 0 (the document's directory) to %d", a.RewriteScope, maxRewriteScope))
	}
	secret := a.SecureLinkSecret
	if secret == "" {
		secret = "-" // the expression is checked before the secret is read
	}
	if _, err := a.secureLink(secret); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// secureLink compiles the secure_link settings with secret; its errors
// name the flag at fault.
func (a *AuthConfig) secureLink(secret string) (*token.SecureLinkVerifier, error) {
	hash, expires, err := token.ParseSecureLinkArgs(a.SecureLinkArgs)
	if err != nil {
		return nil, fmt.Errorf("-auth-securelink-args %q: %w", a.SecureLinkArgs, err)
	}
	if _, err := regexp.Compile(a.SecureLinkLocation); err != nil {
		return nil, fmt.Errorf("-auth-securelink-location %q: %w", a.SecureLinkLocation, err)
	}
	v, err := token.NewSecureLink(token.SecureLinkConfig{Secret: secret, Expression: a.SecureLinkExpression,
		HashArg: hash, ExpiresArg: expires, Location: a.SecureLinkLocation})
	if err != nil {
		return nil, fmt.Errorf("-auth-securelink-expression %q: %w", a.SecureLinkExpression, err)
	}
	return v, nil
}

func (a *AuthConfig) enabled() bool { return a.Keys != nil || a.SecureLinkSecret != "" }

// authorizer checks every request that is not public.
type authorizer struct {
	cfg      AuthConfig
	verifier *token.Verifier           // EdgeAuth scheme
	link     *token.SecureLinkVerifier // secure_link scheme
	scope    scopeSigner               // signs and (secure_link) checks scope credentials
	prefix   string                    // "t/": the path carrier, as the cleaned path starts
	stats    *authCounters
	logs     [NumAuthReasons]rateLimitedLog // refusals, by AuthReason.logGroup, so each reason is logged
	redact   token.Redactor                 // hides this configuration's carriers in logs
	outPool  sync.Pool                      // *[]byte: rewritten playlists (serveRewritten), copied into the response
}

var errNoToken = errors.New("origin: no token")

func newAuthorizer(cfg AuthConfig, stats *authCounters, now func() time.Time) (*authorizer, error) {
	a := &authorizer{cfg: cfg, stats: stats}
	a.outPool.New = func() any { b := make([]byte, 0, 4<<10); return &b }
	if s := a.cfg.MissingStatus; s != fasthttp.StatusUnauthorized && s != fasthttp.StatusForbidden {
		return nil, fmt.Errorf("auth missing status: %d, want 401 or 403", s)
	}
	a.cfg.Public = nil
	for _, p := range cfg.Public {
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		a.cfg.Public = append(a.cfg.Public, p)
	}
	switch {
	case cfg.QueryRewriteMaxBytes == 0:
		a.cfg.QueryRewriteMaxBytes = defaultQueryRewriteMax
	case cfg.QueryRewriteMaxBytes < 0:
		return nil, fmt.Errorf("auth query rewrite max bytes: %d, want >= 0", cfg.QueryRewriteMaxBytes)
	}
	if err := checkRewriteHosts(cfg.QueryRewriteHosts); err != nil {
		return nil, err
	}
	if cfg.PathPrefix != "" {
		p := strings.Trim(cfg.PathPrefix, "/")
		if p == "" || strings.Contains(p, "/") {
			return nil, fmt.Errorf("auth path prefix %q: want one path segment such as t", cfg.PathPrefix)
		}
		a.prefix = p + "/"
	}
	if err := cfg.checkTokens(); err != nil {
		return nil, err
	}
	var err error
	switch {
	case cfg.SecureLinkSecret != "":
		a.link, err = cfg.secureLink(cfg.SecureLinkSecret)
	case cfg.Keys != nil:
		a.verifier, err = token.NewVerifier(token.VerifierConfig{Keys: cfg.Keys, Skew: cfg.Skew})
	}
	if err != nil {
		return nil, err
	}
	if a.scope, err = newScopeSigner(&a.cfg); err != nil {
		return nil, err
	}
	for i := range a.logs {
		a.logs[i].Every, a.logs[i].Now = time.Second, now
	}
	params := []string{cfg.QueryParam, cfg.Cookie}
	if a.link != nil {
		hash, _ := a.link.Names()
		params = append(params, hash)
	}
	a.redact = token.NewRedactor(cfg.PathPrefix, params...)
	return a, nil
}

// checkRewriteHosts refuses a QueryRewriteHosts entry that is not a
// host[:port] (RFC 3986 §3.2.2) a URI could name: a scheme, a path, an
// empty host or port would never match, and the operator would not learn
// why the token is missing.
func checkRewriteHosts(hosts []string) error {
	for _, h := range hosts {
		if h == "" || h[0] == ':' || strings.HasSuffix(h, ":") || !httpmsg.ValidHost([]byte(h)) {
			return fmt.Errorf("auth query rewrite hosts: %q, want host or host:port such as cdn.example.com", h)
		}
	}
	return nil
}

// underPrefix reports whether path is prefix or lies under it, matching
// whole segments: "/public" covers "/public" and "/public/a.ts" but not
// "/publicity.txt". A prefix ending in '/' covers only what is under it.
func underPrefix(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || strings.HasSuffix(prefix, "/") || path[len(prefix)] == '/'
}

// stripCarrier removes "t/<segment>/" from a cleaned path, returning the
// file's name and the segment ("" when the path carries none).
func (a *authorizer) stripCarrier(name string) (file, seg string) {
	if a == nil || a.prefix == "" || !strings.HasPrefix(name, a.prefix) {
		return name, ""
	}
	rest := name[len(a.prefix):]
	i := strings.IndexByte(rest, '/')
	if i <= 0 {
		return name, ""
	}
	return rest[i+1:], rest[:i]
}

// grant is what a successful check says about caching the response: a
// response authorised by a token may be cached no longer than the token
// is valid, and one authorised by a token the URL does not carry must not
// be kept by a shared cache at all (see capCacheControl).
type grant struct {
	until   int64 // unix second the token expires (exp=, expires=); 0: no token involved (public path)
	private bool  // the token came in a cookie or Authorization header, not in the URL
	// seg is the path carrier's segment the check accepted (empty for
	// none): read-ahead checks another file against the same credentials.
	seg   reqName
	query queryGrant // the token came in the query and playlists are rewritten for it (QueryRewrite)
}

// check authorizes a request for file (cleaned, no leading slash). seg is
// the path carrier's segment, if any. It returns the grant and nil,
// errNoToken, or a token error (errors.Is with token.Err*).
func (a *authorizer) check(ctx *fasthttp.RequestCtx, file, seg, ip string, now time.Time) (grant, error) {
	g, public, err := a.verify(ctx, file, seg, ip, now)
	switch {
	case public:
		countAuth(a.stats, AuthPublic)
	default:
		countAuth(a.stats, authReasonOf(err))
	}
	return g, err
}

// verify is check without counting: it also answers whether the request's
// credentials would fetch another file (read-ahead, see permits). public
// says file lies under a public prefix.
func (a *authorizer) verify(ctx *fasthttp.RequestCtx, file, seg, ip string, now time.Time) (g grant, public bool, err error) {
	path := "/" + file
	for _, p := range a.cfg.Public {
		if underPrefix(path, p) {
			return grant{}, true, nil
		}
	}
	var until time.Time
	switch {
	case a.link != nil:
		if tok := a.scope.fromQuery(ctx); tok != nil {
			// A scope credential a rewritten manifest handed out.
			until, err = a.scope.verify(a.link, tok, path, ip, now)
			if err == nil && a.cfg.QueryRewrite {
				g.query.tok = tok
			}
			break
		}
		// A link without expiry leaves until zero: no lifetime to cap.
		until, err = a.verifyLink(ctx, path, ip, now)
		if err == nil && a.cfg.QueryRewrite {
			g.query.link, g.query.linkExpiry = true, until
		}
	case seg != "":
		until, err = a.verifier.VerifySegmentUntil(seg, path, ip, now)
	default:
		tok, inURL := a.findToken(ctx)
		g.private = !inURL
		if inURL && a.cfg.QueryRewrite {
			g.query.tok = tok
		}
		switch {
		case tok == nil:
			err = errNoToken
		case bytes.Contains(tok, []byte("hmac=")):
			until, err = a.verifier.VerifyBytesUntil(tok, path, ip, now)
		default:
			until, err = a.verifier.VerifySegmentUntil(string(tok), path, ip, now)
		}
	}
	if err != nil {
		return grant{}, false, err
	}
	// A token in the URL under CacheLifetimeConfigured leaves the
	// lifetime as configured; one outside it is capped regardless (see
	// capCacheControl: private).
	if !until.IsZero() && (g.private || a.cfg.CacheLifetime != CacheLifetimeConfigured) {
		g.until = until.Unix()
	}
	return g, false, nil
}

// verifyLink checks a secure_link request for path from ip: its expiry
// (zero for a link without one) or why it is refused.
func (a *authorizer) verifyLink(ctx *fasthttp.RequestCtx, path, ip string, now time.Time) (time.Time, error) {
	r := a.linkRequest(ctx, path, ip)
	if len(r.Hash) == 0 {
		return time.Time{}, errNoToken
	}
	exp, err := a.link.Verify(&r, now)
	if err != nil || exp == 0 {
		return time.Time{}, err
	}
	return time.Unix(exp, 0), nil
}

// linkRequest gathers what the secure_link expression reads from ctx.
func (a *authorizer) linkRequest(ctx *fasthttp.RequestCtx, path, ip string) token.LinkRequest {
	r := token.LinkRequest{URI: path, RemoteAddr: ip}
	a.link.FromQuery(&r, ctx.URI().QueryString())
	for i, h := range a.link.Headers() {
		r.Headers[i] = ctx.Request.Header.Peek(h)
	}
	return r
}

// permits reports whether the credentials that earned g (with the request
// in ctx) would also fetch file: a read-ahead may read only what its
// request could have asked for itself.
func (a *authorizer) permits(ctx *fasthttp.RequestCtx, g grant, file, ip string, now time.Time) bool {
	_, _, err := a.verify(ctx, file, g.seg.view(), ip, now)
	return err == nil
}

// findToken looks in the query, cookie and Authorization carriers, in that
// order, and says whether the token came in the URL (the query). Cookies
// and Bearer may hold either the raw token or its segment form (the raw
// one is not always a valid cookie or b64token).
func (a *authorizer) findToken(ctx *fasthttp.RequestCtx) (tok []byte, inURL bool) {
	if a.cfg.QueryParam != "" {
		if v := ctx.QueryArgs().Peek(a.cfg.QueryParam); len(v) > 0 {
			return v, true
		}
	}
	if a.cfg.Cookie != "" {
		if v := ctx.Request.Header.Cookie(a.cfg.Cookie); len(v) > 0 {
			return v, false
		}
	}
	if a.cfg.Bearer {
		if v := ctx.Request.Header.Peek("Authorization"); len(v) > 7 && strings.EqualFold(string(v[:7]), "bearer ") {
			return bytes.TrimSpace(v[7:]), false
		}
	}
	return nil, false
}

// authorize checks the token of a request for name, when authorization is
// on: ok false, ctx holds the refusal. The name it returns is the file's,
// without a path-carried token; the grant says what the token opens.
func (ad *admission) authorize(ctx *fasthttp.RequestCtx, name reqName) (_ reqName, g grant, ok bool) {
	a := ad.pol.of(ctx).auth
	if a == nil {
		return name, g, true
	}
	file, seg := a.stripCarrier(name.view())
	g, err := a.check(ctx, file, seg, ad.client.ip(ctx), ad.now())
	if err != nil {
		ad.deny(ctx, a, file, err)
		return name, g, false
	}
	g.seg = name.sub(seg)
	return name.sub(file), g, true
}

// deny answers a failed check. The body says only the status: nothing that
// tells an attacker which part of a token was wrong. The log line names the
// reason and the path, and never the token's MAC.
func (ad *admission) deny(ctx *fasthttp.RequestCtx, a *authorizer, file string, err error) {
	code := fasthttp.StatusForbidden
	switch {
	case errors.Is(err, errNoToken):
		code = a.cfg.MissingStatus
		if code == fasthttp.StatusUnauthorized {
			ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="segorigin"`)
		}
	case a.link != nil && errors.Is(err, token.ErrExpired):
		code = a.cfg.SecureLinkExpiredStatus
	}
	r := authReasonOf(err)
	if l := &a.logs[r.logGroup()]; l.Allow() {
		ad.log.Info("request refused", "status", code, "reason", r.String(), "path", ad.loggable("/"+file),
			"client", ad.client.ip(ctx), "suppressed", l.Suppressed())
	}
	// A 410 is a refusal too: the Cache-Control of refusals, not of 404s.
	ad.resp.setErrorHeaders(ctx, min(code, fasthttp.StatusForbidden))
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.SetStatusCode(code)
	ctx.SetBodyString(fmt.Sprintf("%d %s\n", code, fasthttp.StatusMessage(code)))
}

// redactor returns what hides tokens in logged text: the carriers of the
// authorization in force, or (authorization off) hmac= fields only.
func (ad *admission) redactor() token.Redactor {
	if a := ad.pol.now().auth; a != nil {
		return a.redact
	}
	return token.Redactor{}
}
