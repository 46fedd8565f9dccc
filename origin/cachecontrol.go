package origin

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// errorCacheControl is the Cache-Control value of an error response by
// status, from cfg (nil: none).
type errorCacheControl struct {
	notFound, denied, rangeErr, client, server []byte
}

func newErrorCacheControl(cfg Config) errorCacheControl {
	b := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	return errorCacheControl{
		notFound: b(cfg.CacheControlNotFound),
		denied:   b(cfg.CacheControlDenied),
		rangeErr: b(cfg.CacheControlRange),
		client:   b(cfg.CacheControlClientError),
		server:   b(cfg.CacheControlServerError),
	}
}

func (e *errorCacheControl) forStatus(code int) []byte {
	switch {
	case code == fasthttp.StatusNotFound, code == fasthttp.StatusGone:
		return e.notFound
	case code == fasthttp.StatusUnauthorized, code == fasthttp.StatusForbidden:
		return e.denied
	case code == fasthttp.StatusRequestedRangeNotSatisfiable:
		return e.rangeErr
	case code >= 500:
		return e.server
	}
	return e.client
}

// setErrorHeaders writes the Cache-Control and operator headers of an
// error response.
func (rs *responder) setErrorHeaders(ctx *fasthttp.RequestCtx, code int) {
	hdr, tab := &ctx.Response.Header, rs.tab(ctx)
	if cc := tab.errorCC.forStatus(code); len(cc) > 0 {
		hdr.SetCanonical(hdrCacheControl, cc)
	} else {
		hdr.Del("Cache-Control")
	}
	rs.addOperatorHeaders(hdr, tab.extraHeaders[kindError])
}

// capCacheControl appends to dst the Cache-Control value cc rewritten for a
// response authorised by a token valid for remaining more seconds, so that
// no cache keeps the response past the token's expiry:
//
//   - max-age and s-maxage are lowered to remaining (a missing max-age is
//     added, or heuristic freshness, RFC 9111 §4.2.2, could exceed it);
//   - immutable, stale-while-revalidate and stale-if-error go: each lets a
//     cache use the response without asking the origin, which would refuse
//     the expired token;
//   - private (the token came in a cookie or Authorization header, so the
//     URL does not carry it): public and s-maxage go and private is added,
//     since a shared cache keyed by the URL would hand the response to
//     requests without any token (RFC 9111 §5.2.2.7).
//
// no-store and no-cache are kept, and then no lifetime is added.
func capCacheControl(dst, cc []byte, remaining int64, private bool) []byte {
	remaining = max(remaining, 0)
	start := len(dst)
	sawMaxAge, noStore := false, false
	if private {
		dst = appendDirective(dst, start, []byte("private")...)
	}
	for rest := cc; len(rest) > 0; {
		var d []byte
		d, rest, _ = bytes.Cut(rest, []byte(","))
		d = bytes.TrimSpace(d)
		name, value, _ := bytes.Cut(d, []byte("="))
		switch {
		case len(name) == 0, isDirective(name, "immutable"),
			isDirective(name, "stale-while-revalidate"), isDirective(name, "stale-if-error"):
		case isDirective(name, "public"), isDirective(name, "private"):
			if !private {
				dst = appendDirective(dst, start, d...)
			}
		case isDirective(name, "s-maxage"), isDirective(name, "max-age"):
			if isDirective(name, "s-maxage") && private {
				continue
			}
			sawMaxAge = sawMaxAge || isDirective(name, "max-age")
			if n, ok := parseSeconds(value); ok && n <= remaining {
				dst = appendDirective(dst, start, d...)
				continue
			}
			dst = appendDirective(dst, start, name...)
			dst = strconv.AppendInt(append(dst, '='), remaining, 10)
		default:
			noStore = noStore || isDirective(name, "no-store") || isDirective(name, "no-cache")
			dst = appendDirective(dst, start, d...)
		}
	}
	if !sawMaxAge && !noStore {
		dst = appendDirective(dst, start, []byte("max-age=")...)
		dst = strconv.AppendInt(dst, remaining, 10)
	}
	return dst
}

// appendDirective appends d to a Cache-Control list that began at start.
func appendDirective(dst []byte, start int, d ...byte) []byte {
	if len(dst) > start {
		dst = append(dst, ", "...)
	}
	return append(dst, d...)
}

// isDirective: directive names are case-insensitive (RFC 9111 §5.2).
func isDirective(name []byte, want string) bool {
	return len(name) == len(want) && bytes.EqualFold(name, []byte(want))
}

// parseSeconds reads a delta-seconds value (RFC 9111 §1.2.2), quoted or
// not; false for anything else.
func parseSeconds(v []byte) (int64, bool) {
	v = bytes.Trim(v, `"`)
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// kindError indexes Server.extraHeaders for error responses, beside the
// file kinds.
const kindError = kindSegment + 1

// HeaderRule is an operator's response header for one kind of response:
// "playlist", "segment", "other" (file responses: 200, 206, 304), "error"
// (4xx and 5xx) or "all".
type HeaderRule struct {
	Kind, Name, Value string
}

// ParseHeaderRule parses the -header form "kind:Name: value".
func ParseHeaderRule(s string) (HeaderRule, error) {
	k, rest, ok := strings.Cut(s, ":")
	name, value, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return HeaderRule{}, fmt.Errorf("header %q: want kind:Name: value", s)
	}
	r := HeaderRule{Kind: strings.TrimSpace(k), Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}
	return r, r.validate()
}

// reservedHeaders are those the server computes itself; an operator header
// must not contradict them (framing, validators, CORS, the token cap on
// Cache-Control).
var reservedHeaders = map[string]bool{
	"content-length": true, "content-type": true, "content-range": true, "content-encoding": true,
	"transfer-encoding": true, "connection": true, "keep-alive": true, "upgrade": true, "trailer": true,
	"te": true, "etag": true, "last-modified": true, "accept-ranges": true, "cache-control": true,
	"date": true, "server": true, "www-authenticate": true, "retry-after": true, "allow": true,
	"timing-allow-origin": true, "x-content-type-options": true,
}

func (r HeaderRule) validate() error {
	switch r.Kind {
	case "playlist", "segment", "other", "error", "all":
	default:
		return fmt.Errorf("header %q: kind %q, want playlist, segment, other, error or all", r.Name, r.Kind)
	}
	if r.Name == "" || strings.IndexFunc(r.Name, func(c rune) bool { return !isTokenChar(c) }) >= 0 {
		return fmt.Errorf("header %q: not a valid field name (RFC 9110 §5.1)", r.Name)
	}
	lower := strings.ToLower(r.Name)
	if reservedHeaders[lower] || strings.HasPrefix(lower, "access-control-") {
		return fmt.Errorf("header %q: set by the server itself (see the -cache-control-* and -cors-* flags)", r.Name)
	}
	if strings.IndexFunc(r.Value, func(c rune) bool { return c < 0x20 && c != '\t' || c == 0x7f }) >= 0 {
		return fmt.Errorf("header %q: value holds a control character", r.Name)
	}
	return nil
}

// isTokenChar: RFC 9110 §5.6.2 tchar.
func isTokenChar(c rune) bool {
	return c < 0x7f && c > 0x20 && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
}

// headerKV is a validated operator header, ready for the response.
type headerKV struct{ name, value []byte }

// extraHeaderValues groups the rules, validated by Config.validate, by
// kind (kindOther..kindError).
func extraHeaderValues(rules []HeaderRule) [kindError + 1][]headerKV {
	var out [kindError + 1][]headerKV
	for _, r := range rules {
		kv := headerKV{[]byte(r.Name), []byte(r.Value)}
		for k, name := range [...]string{kindOther: "other", kindPlaylist: "playlist", kindSegment: "segment", kindError: "error"} {
			if r.Kind == name || r.Kind == "all" {
				out[k] = append(out[k], kv)
			}
		}
	}
	return out
}

func (rs *responder) addOperatorHeaders(hdr *fasthttp.ResponseHeader, kvs []headerKV) {
	for _, kv := range kvs {
		hdr.AddBytesKV(kv.name, kv.value)
	}
}
