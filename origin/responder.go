package origin

import (
	"log/slog"
	"time"

	"github.com/valyala/fasthttp"
)

// responder is the one place that writes what answers carry by
// configuration and by status: Cache-Control by kind and by status, the
// operator's headers, CORS, the validators of file answers, the
// multipart boundary, and every error answer (status, body, Retry-After)
// with the rate-limited log line of its refusal. It takes from the server
// only what it needs: the policies holding the tables made from the
// configuration (reloaded: see policy), the clock,
// the counters it moves, the log and its redaction.
type responder struct {
	pol *policies // the tables made from the configuration: the request's pinned policy's (tab)

	now           func() time.Time
	st            *counters
	countResponse func(code int) // the recorder's, for answers no request reached
	log           *slog.Logger
	loggable      func(string) string

	emfileLog   rateLimitedLog // "out of file descriptors", once per interval
	parseErrLog rateLimitedLog // unparseable requests, once per interval
	badPathLog  rateLimitedLog // paths refused with 400, once per interval
	escapeLog   rateLimitedLog // symlinks leaving the root, once per interval
	coldLog     rateLimitedLog // cold reads failing or refused, once per interval (shared with the cold path)
	permLog     rateLimitedLog // files the server may not open (403), once per interval
}

func newResponder(cfg Config, pol *policies, st *counters, countResponse func(int), loggable func(string) string) *responder {
	rs := &responder{pol: pol,
		now: cfg.Now, st: st, countResponse: countResponse, log: cfg.Logger, loggable: loggable}
	for _, l := range []*rateLimitedLog{&rs.emfileLog, &rs.parseErrLog, &rs.badPathLog, &rs.escapeLog, &rs.coldLog, &rs.permLog} {
		l.Every, l.Now = 10*time.Second, cfg.Now
	}
	return rs
}

// tab is the tables of the policy ctx pinned.
func (rs *responder) tab(ctx *fasthttp.RequestCtx) *respTables { return &rs.pol.of(ctx).resp }
