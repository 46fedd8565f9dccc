package origin

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// corsPolicy decides the CORS response headers. It is built once from the
// configuration.
type corsPolicy struct {
	any          bool                // "*": every origin, no Vary needed
	origins      map[string]struct{} // exact origins to echo back
	credentials  bool                // send Access-Control-Allow-Credentials: true (never with any)
	allowHeaders string              // preflight Access-Control-Allow-Headers
	maxAge       string              // preflight Access-Control-Max-Age, in seconds
}

// DefaultCORSAllowHeaders returns the request headers a preflight allows
// by default: what players send beyond the CORS-safelisted ones. A
// multi-range Range, If-Range, the conditionals, Authorization (Bearer
// tokens; never covered by a "*" wildcard) and CTA-5004 CMCD's four
// headers, which hls.js and dash.js send in header mode.
func DefaultCORSAllowHeaders() []string {
	return []string{
		"Range", "If-Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since",
		"Authorization", "CMCD-Request", "CMCD-Object", "CMCD-Session", "CMCD-Status",
	}
}

func newCORSPolicy(cfg Config) corsPolicy {
	p := corsPolicy{
		origins:      map[string]struct{}{},
		credentials:  cfg.CORSCredentials,
		allowHeaders: strings.Join(cfg.CORSAllowHeaders, ", "),
		maxAge:       strconv.FormatInt(int64(cfg.CORSMaxAge/time.Second), 10),
	}
	for _, o := range cfg.CORSOrigins {
		o = strings.TrimSpace(o)
		switch o {
		case "":
		case "*":
			p.any = true
		default:
			p.origins[strings.TrimRight(o, "/")] = struct{}{}
		}
	}
	return p
}

// validateCORS checks the CORS settings of c.
func (c *Config) validateCORS() error {
	var errs []error
	if c.CORSCredentials {
		// Fetch: a credentialed response with Access-Control-Allow-Origin
		// "*" fails the CORS check, and echoing any Origin would let every
		// site read responses with the viewer's cookies.
		n := 0
		for _, o := range c.CORSOrigins {
			if strings.TrimSpace(o) == "*" {
				errs = append(errs, errors.New("cors-credentials: needs an explicit -cors-origins list, not *"))
			}
			if strings.TrimSpace(o) != "" {
				n++
			}
		}
		if n == 0 {
			errs = append(errs, errors.New("cors-credentials: needs -cors-origins"))
		}
	}
	for _, h := range c.CORSAllowHeaders {
		if h == "" || strings.IndexFunc(h, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			errs = append(errs, errors.New("cors-allow-headers: "+strconv.Quote(h)+" is not a header name"))
		}
	}
	if c.CORSMaxAge < 0 {
		errs = append(errs, errors.New("cors-max-age: want >= 0"))
	}
	return errors.Join(errs...)
}

func (p corsPolicy) enabled() bool { return p.any || len(p.origins) > 0 }

// allow returns the value for Access-Control-Allow-Origin, or "" when the
// request's origin is not allowed.
func (p corsPolicy) allow(origin []byte) string {
	if p.any {
		return "*"
	}
	if _, ok := p.origins[string(origin)]; ok {
		return string(origin)
	}
	return ""
}

const (
	corsAllowMethods  = "GET, HEAD, OPTIONS"
	corsExposeHeaders = "Content-Length, Content-Range, Content-Type, ETag, Last-Modified, Accept-Ranges, Date"
)

// setCORS adds Access-Control-Allow-Origin (and Expose-Headers,
// Timing-Allow-Origin, Allow-Credentials) to every response when the
// request's Origin is allowed: players need it on 206, 304 and errors too,
// or they cannot even read the status. Timing-Allow-Origin lets the page's
// Resource Timing see a response's phases (players use it to estimate
// bandwidth); it names the same origins as Allow-Origin.
func (rs *responder) setCORS(ctx *fasthttp.RequestCtx, origin []byte) {
	cors := &rs.tab(ctx).cors
	if !cors.enabled() {
		return
	}
	hdr := &ctx.Response.Header
	if !cors.any {
		hdr.Add("Vary", "Origin")
	}
	if len(origin) == 0 {
		if cors.any {
			hdr.SetCanonical(hdrAllowOrigin, valAnyOrigin)
			hdr.SetCanonical(hdrTimingAllow, valAnyOrigin)
		}
		return
	}
	allow := cors.allow(origin)
	if allow == "" {
		return
	}
	hdr.SetCanonical(hdrAllowOrigin, []byte(allow))
	hdr.SetCanonical(hdrTimingAllow, []byte(allow))
	hdr.SetCanonical(hdrExposeHeaders, valExposeHeaders)
	if cors.credentials {
		hdr.SetCanonical(hdrAllowCreds, valTrue)
	}
}

// options answers OPTIONS: a CORS preflight when it carries
// Access-Control-Request-Method, a plain capability answer otherwise.
func (rs *responder) options(ctx *fasthttp.RequestCtx) {
	hdr := &ctx.Response.Header
	hdr.Set("Allow", corsAllowMethods)
	if len(ctx.Request.Header.Peek("Access-Control-Request-Method")) > 0 &&
		len(hdr.Peek("Access-Control-Allow-Origin")) > 0 {
		hdr.Set("Access-Control-Allow-Methods", corsAllowMethods)
		cors := &rs.tab(ctx).cors
		if cors.allowHeaders != "" {
			hdr.Set("Access-Control-Allow-Headers", cors.allowHeaders)
		}
		hdr.Set("Access-Control-Max-Age", cors.maxAge)
	}
	hdr.SetContentLength(0)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}
