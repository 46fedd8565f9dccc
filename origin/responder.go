package origin

import (
	"log/slog"
	"time"
)

// responder is the one place that writes what answers carry by
// configuration and by status: Cache-Control by kind and by status, the
// operator's headers, CORS, the validators of file answers, the
// multipart boundary, and every error answer (status, body, Retry-After)
// with the rate-limited log line of its refusal. It takes from the server
// only what it needs: the tables made from the configuration, the clock,
// the counters it moves, the log and its redaction.
type responder struct {
	cors         corsPolicy
	cacheControl [3][]byte                 // Cache-Control value by kind, from cfg
	errorCC      errorCacheControl         // Cache-Control of error responses by status, from cfg
	extraHeaders [kindError + 1][]headerKV // operator headers by kind, kindError for errors
	types        map[string]mediaType      // Content-Type and kind by extension: built in, then cfg.Types

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

func newResponder(cfg Config, st *counters, countResponse func(int), loggable func(string) string) *responder {
	rs := &responder{cors: newCORSPolicy(cfg), cacheControl: cacheControlValues(cfg), errorCC: newErrorCacheControl(cfg),
		extraHeaders: extraHeaderValues(cfg.Headers), types: mediaTypeTable(cfg.Types),
		now: cfg.Now, st: st, countResponse: countResponse, log: cfg.Logger, loggable: loggable}
	for _, l := range []*rateLimitedLog{&rs.emfileLog, &rs.parseErrLog, &rs.badPathLog, &rs.escapeLog, &rs.coldLog, &rs.permLog} {
		l.Every, l.Now = 10*time.Second, cfg.Now
	}
	return rs
}
