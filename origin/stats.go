package origin

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"segorigin/origin/conn"
	"segorigin/origin/loop"
	"segorigin/watcher"
)

// Counters declares every counter of the server once, for two types: C
// is atomic.Int64 in the live set the server increments (counters) and
// int64 in the snapshot Server.Stats returns (Stats), which is copied
// field by field from the live set without naming a field (snapshot.go).
// What /metrics exports of them is declared in each subsystem's metric
// table (metrics.go). Nothing global.
type Counters[C any] struct {
	Requests        C                       // requests that reached the handler
	Status2xx       C                       // 2xx responses (200, 204, 206)
	Status3xx       C                       // 3xx responses (304)
	Status4xx       C                       // 4xx responses, unparseable requests' included
	Status5xx       C                       // 5xx responses (503 on EMFILE included)
	ByStatus        [len(statusCodes) + 1]C // responses by code, as statusCodes; the last counts any other code
	BadRequests     C                       // requests fasthttp could not parse (400/408/431)
	HeaderTooLarge  C                       // of those, 431 answers
	Multipart       C                       // multipart/byteranges answers
	RangesIgnored   C                       // Range headers ignored as invalid or over the cap
	Kinds           [3]C                    // file responses (200, 206, 304) by kind: other, playlist, segment
	RootUnavailable C                       // times the media root was found missing, replaced or unreadable
	BadPaths        C                       // request paths refused with 400 (bad escape, control byte, climbing above the root)
	AccessLogErrors C                       // access log lines the writer refused
	InProgress      C                       // requests for a file still being written (503, or bytes with no-store)
	CMCD            CMCDCounters[C]         // requests carrying CMCD

	// ConnsOpen, ConnsRefused, AcceptEMFILE, Proxy*: counted by the
	// listeners' gate (origin/conn).
	conn.ListenerCounters[C]

	Transport TransportCounters[C]
	Auth      AuthCounters[C]
	Rewrite   RewriteCounters[C] // playlists and manifests answered to a query token (Auth.QueryRewrite)
	TLS       conn.TLSCounters[C]
	Cold      ColdCounters[C]
	ReadAhead ReadAheadCounters[C] // zero when read-ahead is off
	Loop      loop.Counters[C]     // zero where no event loop serves
	Content   ContentCounters[C]   // zero unless -etag content
}

// counters are the server's live counters.
type counters = Counters[atomic.Int64]

// TransportCounters count which body path served each response body, and
// the bytes each sent (framing of multipart bodies included).
type TransportCounters[C any] struct {
	SendfileResponses C // bodies sent by sendfile(2) on plain TCP
	SendfileBytes     C
	KTLSResponses     C // bodies sent by sendfile(2) on a kTLS socket
	KTLSBytes         C
	InlineResponses   C // bodies sent from the cache entry's memory, with the header in one send
	InlineBytes       C
	CopyResponses     C // bodies sent by pread into a pooled buffer and write
	CopyBytes         C
	SendfileFallbacks C // sendfile refused by the file system (EINVAL/ENOSYS): served by copy
	Truncated         C // files that shrank while being sent: connection closed
	Aborted           C // bodies cut short by the client or a write timeout
}

// KindName is the metric label of Stats.Kinds[i]: "other", "playlist" or
// "segment".
func KindName(i int) string { return kind(i).String() }

// Latency is the response-latency histogram by kind of file, for an
// exporter to register (origin/admin).
func (s *Server) Latency() prometheus.Collector { return s.latency }

// LogSuppressed returns, by kind, the log lines rate limiting has held
// back (the events themselves are counted by their own Stats), for an
// exporter: parse_error, bad_path, root_escape, fasthttp, emfile, auth,
// access_log, in_progress.
func (s *Server) LogSuppressed() map[string]int64 {
	var auth int64
	if a := s.auth.Load(); a != nil {
		for i := range a.logs {
			auth += a.logs[i].Dropped()
		}
	}
	return map[string]int64{
		"parse_error": s.parseErrLog.Dropped(), "bad_path": s.badPathLog.Dropped(),
		"root_escape": s.escapeLog.Dropped(), "fasthttp": s.fasthttpLog.Dropped(),
		"emfile": s.emfileLog.Dropped(), "auth": auth, "access_log": s.access.errLog.Dropped(),
		"in_progress": s.inProgressLog.limit.Dropped(),
	}
}

// WatchStats returns a snapshot of the watcher's counters; ok is false
// when the server runs without a watcher.
func (s *Server) WatchStats() (st watcher.Stats, ok bool) {
	if s.watch == nil {
		return watcher.Stats{}, false
	}
	return s.watch.Stats(), true
}

// AdminPprof reports whether the admin endpoints include /debug/pprof/
// (Config.AdminPprof).
func (s *Server) AdminPprof() bool { return s.cfg.AdminPprof }

// statusCodes are the status codes the server emits, each counted on its
// own; any other code (none is expected) is counted as "other", so the
// metric's cardinality is fixed.
var statusCodes = [...]int{200, 204, 206, 304, 400, 401, 403, 404, 405, 408, 410, 412, 416, 431, 500, 501, 503, 505}

// statusIndex is code's index in ByStatus.
func statusIndex(code int) int {
	for i, c := range statusCodes {
		if c == code {
			return i
		}
	}
	return len(statusCodes)
}

// countResponse counts one finished response by its status code and class.
func (s *Server) countResponse(code int) {
	c := &s.stats
	c.ByStatus[statusIndex(code)].Add(1)
	switch code / 100 {
	case 2:
		c.Status2xx.Add(1)
	case 3:
		c.Status3xx.Add(1)
	case 4:
		c.Status4xx.Add(1)
	case 5:
		c.Status5xx.Add(1)
	}
}

// StatusLabel is the metric label of Stats.ByStatus[i]: the code, or
// "other" for the last.
func StatusLabel(i int) string {
	if i < len(statusCodes) {
		return strconv.Itoa(statusCodes[i])
	}
	return "other"
}

// Responses returns how many responses had status code (0 for a code the
// server does not count on its own).
func (s Stats) Responses(code int) int64 {
	if i := statusIndex(code); i < len(statusCodes) {
		return s.ByStatus[i]
	}
	return 0
}

// errorKindLabel is segorigin_response_seconds' kind for 4xx and 5xx
// responses, so that 404s and 400s do not blur the latency of files.
const errorKindLabel = "error"

// record counts a finished response by the status it carries, and its
// latency under its kind of file, or under "error" for a 4xx or 5xx.
func (s *Server) record(ctx *fasthttp.RequestCtx, k kind, d time.Duration) {
	code := ctx.Response.StatusCode()
	s.countResponse(code)
	o := s.latencyBy[k]
	if code >= 400 {
		o = s.latencyErr
	}
	o.Observe(d.Seconds())
}

// Build is the binary's description given in Config.Build, for
// segorigin_build_info.
func (s *Server) Build() BuildInfo { return s.cfg.Build }
