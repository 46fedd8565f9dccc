package origin

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"segorigin/cache"
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
	BadRequests     C                       // requests refused before the handler: unparseable, timed out, too large (400/408/413/414/431/505)
	HeaderTooLarge  C                       // of those, 431 answers
	Multipart       C                       // multipart/byteranges answers
	RangesIgnored   C                       // Range headers ignored as invalid or over the cap
	Kinds           [3]C                    // file responses (200, 206, 304) by kind: other, playlist, segment
	RootUnavailable C                       // times the media root was found missing or unreadable
	RootChanges     C                       // times the media root's path was found naming another directory (a symlinked release swapped), then served
	BadPaths        C                       // request paths refused with 400 (bad escape, control byte, climbing above the root)
	AccessLogErrors C                       // access log lines the writer refused
	InProgress      C                       // requests for a file still being written (503, or bytes with no-store)
	ClientLimited   C                       // requests answered 503: their client had -max-conns-per-ip in progress
	CMCD            CMCDCounters[C]         // requests carrying CMCD
	FileErrors      FileErrorCounters[C]    // requests whose file could not be opened or read (403 permission denied, 500)

	// ConnsOpen, ConnsRefused, AcceptEMFILE, Proxy*: counted by the
	// listeners' gate (origin/conn).
	conn.ListenerCounters[C]

	Transport TransportCounters[C]
	Auth      AuthCounters[C]
	Access    AccessCounters[C]  // requests refused by the allow/deny rules and valid referers
	Rewrite   RewriteCounters[C] // playlists and manifests answered to a query token (Auth.QueryRewrite)
	Gzip      GzipCounters[C]    // text answers gzip-compressed, or not (Config.Gzip)
	Reload    ReloadCounters[C]  // reloads of the settings (Server.Reload)
	TLS       conn.TLSCounters[C]
	Cold      ColdCounters[C]
	ReadAhead ReadAheadCounters[C] // zero when read-ahead is off
	Loop      loop.Counters[C]     // zero where no event loop serves
	Content   ContentCounters[C]   // zero unless -etag content
	Live      LiveCounters[C]      // requests held for a playlist or a hinted part (live_hint.go)
	Grow      GrowCounters[C]      // files in live directories streamed as they grow (grow.go)
}

// counters are the server's live counters.
type counters = Counters[atomic.Int64]

// KindName is the metric label of Stats.Kinds[i]: "other", "playlist" or
// "segment".
func KindName(i int) string { return kind(i).String() }

// Latency is the response-latency histogram by kind of file, for an
// exporter to register (origin/admin).
func (s *Server) Latency() prometheus.Collector { return s.rec.latency }

// logSuppressed returns, by kind, the log lines rate limiting has held
// back in s (the events themselves are counted by their own Stats), for
// the exporter: parse_error, bad_path, root_escape, fasthttp, emfile, auth,
// access, access_log, in_progress, permission_denied, client_limit.
func logSuppressed(s *Server) map[string]int64 {
	var auth int64
	if a := s.pol.now().auth; a != nil {
		for i := range a.logs {
			auth += a.logs[i].Dropped()
		}
	}
	return map[string]int64{
		"parse_error": s.resp.parseErrLog.Dropped(), "bad_path": s.resp.badPathLog.Dropped(),
		"root_escape": s.resp.escapeLog.Dropped(), "fasthttp": s.fasthttpLog.lim.Dropped(),
		"emfile": s.resp.emfileLog.Dropped(), "auth": auth, "access": s.admit.accessLogDropped(), "access_log": s.rec.access.errLog.Dropped(),
		"in_progress": s.pub.logged.limit.Dropped(), "permission_denied": s.resp.permLog.Dropped(),
		"client_limit": s.admit.perClient.dropped(),
	}
}

// AdminPprof reports whether the admin endpoints include /debug/pprof/
// (Config.AdminPprof).
func (s *Server) AdminPprof() bool { return s.cfg.AdminPprof }

// statusCodes are the status codes the server emits, each counted on its
// own; any other code (none is expected) is counted as "other", so the
// metric's cardinality is fixed.
var statusCodes = [...]int{200, 204, 206, 304, 400, 401, 403, 404, 405, 408, 410, 412, 413, 414, 416, 431, 500, 501, 503, 505}

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
func (r *recorder) countResponse(code int) {
	c := r.st
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
func (r *recorder) record(ctx *fasthttp.RequestCtx, k kind, d time.Duration) {
	code := ctx.Response.StatusCode()
	r.countResponse(code)
	o := r.latencyBy[k]
	if code >= 400 {
		o = r.latencyErr
	}
	o.Observe(d.Seconds())
}

// Build is the binary's description given in Config.Build, for
// segorigin_build_info.
func (s *Server) Build() BuildInfo { return s.cfg.Build }

// serverMetrics declares the metrics of the request path as a whole.
func serverMetrics(t *table, st *Stats, b BuildInfo, rootAvailable bool, suppressed map[string]int64) {
	t.one("requests_total", "Requests that reached the handler.", st.Requests)
	t.byLabel(t.counter("responses_total", "Responses by status class (unparseable requests' 400, 408 and 431 included).", "class"),
		map[string]int64{"2xx": st.Status2xx, "3xx": st.Status3xx, "4xx": st.Status4xx, "5xx": st.Status5xx})
	t.each(t.counter("responses_by_code_total", "Responses by status code: the codes the server emits, any other as \"other\".", "code"),
		st.ByStatus[:], StatusLabel)
	t.add(t.gauge("build_info", "The running binary: version, Go version and VCS commit; always 1.", "version", "goversion", "commit"),
		1, b.Version, b.GoVersion, b.Commit)
	t.add(t.gauge("root_available", "1 while the media root is a readable directory, as of the last check."), gaugeFlag(rootAvailable))
	t.one("root_unavailable_total", "Times the media root was found missing or unreadable (each outage counted once).", st.RootUnavailable)
	t.one("root_changes_total", "Times the media root's path was found naming another directory (a symlinked root swapped to another release), which is served from then on.", st.RootChanges)
	t.each(t.counter("file_responses_total", "File responses (200, 206, 304) by kind of file.", "kind"), st.Kinds[:], KindName)
	t.one("bad_requests_total", "Requests refused before the handler: unparseable, timed out or too large (400, 408, 413, 414, 431, 505).", st.BadRequests)
	t.one("header_too_large_total", "Requests refused with 431.", st.HeaderTooLarge)
	t.one("multipart_responses_total", "multipart/byteranges responses.", st.Multipart)
	t.one("ranges_ignored_total", "Range headers ignored as invalid or over -max-ranges.", st.RangesIgnored)
	t.one("bad_paths_total", "Request paths refused with 400 (bad escape, control byte, climbing above the root).", st.BadPaths)
	t.one("access_log_errors_total", "Access log lines the log writer refused.", st.AccessLogErrors)
	t.one("client_limited_total", "Requests answered 503 because their client (as the trusted proxies name it) had -max-conns-per-ip requests in progress.", st.ClientLimited)
	t.one("in_progress_total", "Requests for a file still being written (-settle): answered 503, or with -in-progress uncached its bytes with no-store.", st.InProgress)
	t.byLabel(t.counter("log_suppressed_total", "Log lines held back by rate limiting, by kind (their events are still counted by their own metrics).", "kind"),
		suppressed)
}

// listenerMetrics declares the metrics of the listeners' gate
// (origin/conn).
func listenerMetrics(t *table, st *ListenerStats) {
	t.add(t.gauge("connections_open", "Plain TCP connections open."), st.ConnsOpen)
	t.one("connections_refused_total", "Connections closed at accept by -max-conns or -max-conns-per-ip.", st.ConnsRefused)
	t.one("accept_emfile_total", "Accepts that failed for lack of file descriptors (retried after shedding the cache).", st.AcceptEMFILE)
	t.byLabel(t.counter("proxy_protocol_total", "Connections by PROXY protocol outcome (with -proxy-protocol).", "outcome"), map[string]int64{
		"accepted": st.ProxyAccepted, "local": st.ProxyLocal, "absent": st.ProxyAbsent,
		"missing": st.ProxyMissing, "untrusted": st.ProxyUntrusted, "malformed": st.ProxyMalformed,
	})
}

// loopMetrics declares the event loops' metrics (zero where none serves).
func loopMetrics(t *table, st *LoopStats) {
	t.one("loop_wakeups_total", "Event-loop wake-ups (epoll_wait or io_uring_enter returns), all loops.", st.Wakeups)
	t.one("loop_parks_total", "Times an idle event loop parked on Go's netpoller.", st.Parks)
	t.one("loop_sends_total", "sendmsg and sendfile calls of the event loops.", st.Sends)
	t.one("loop_short_sends_total", "Event-loop sends that filled the socket buffer (the connection then waits until it is writable).", st.ShortSends)
	t.one("loop_timeouts_total", "Connections the event loops closed for a read, idle or write timeout.", st.Timeouts)
	t.one("loop_uring_submissions_total", "io_uring submissions the kernel took from the loops' rings (-poller uring).", st.UringSubmissions)
	t.one("loop_uring_completions_total", "io_uring completions the loops reaped (-poller uring).", st.UringCompletions)
	t.one("loop_uring_enters_total", "io_uring_enter calls of the loops (-poller uring).", st.UringEnters)
	t.one("loop_uring_receives_total", "Requests' bytes the loops received into their io_uring buffers, each a read(2) not made (-poller uring).", st.UringReceives)
	t.one("loop_uring_sends_total", "Response sends the loops made in their io_uring rings (-poller uring; also in loop_sends_total).", st.UringSends)
	t.one("loop_uring_no_buffers_total", "io_uring receives that found every buffer of their loop held; the loop then read the socket itself (-poller uring).", st.UringNoBuffers)
	t.one("loop_poller_fallbacks_total", "Loop engines that asked for -poller auto and use epoll because the kernel refused io_uring.", st.PollerFallbacks)
}

// cacheMetrics declares the file cache's metrics, read from its own
// snapshot (cache.Stats).
func cacheMetrics(t *table, cs cache.Stats) {
	ops := t.counter("cache_operations_total", "File cache operations.", "op")
	for op, v := range map[string]uint64{
		"hit": cs.Hits, "miss": cs.Misses, "negative_hit": cs.NegativeHits, "eviction": cs.Evictions,
		"invalidation": cs.Invalidations, "revalidation": cs.Revalidations, "stale": cs.Stale, "emfile": cs.EMFILE,
		"inline_over_budget": cs.InlineOverBudget, "inline_changed": cs.InlineChanged,
	} {
		t.add(ops, int64(v), op)
	}
	t.add(t.gauge("cache_open_files", "Descriptors the file cache holds open (listed or lent out)."), cs.OpenFiles)
	t.add(t.gauge("cache_inline_files", "Small files whose bytes the file cache holds in memory (listed or lent out)."), cs.InlineFiles)
	t.add(t.gauge("cache_inline_bytes", "Bytes of those files: at most -inline-budget."), cs.InlineBytes)
	entries := t.gauge("cache_entries", "Entries listed in the file cache.", "type")
	t.add(entries, int64(cs.Entries), "file")
	t.add(entries, int64(cs.NegativeEntries), "negative")
	t.add(t.gauge("cache_negative_bytes", "What the negative entries count against -negative-cache-bytes (name bytes plus a fixed overhead each)."), int64(cs.NegativeBytes))
}

// watchMetrics declares the watcher's metrics, read from its own snapshot
// (watcher.Stats).
func watchMetrics(t *table, ws watcher.Stats) {
	t.add(t.counter("watcher_events_total", "File system events the watcher processed."), int64(ws.Events))
	t.add(t.counter("watcher_overflows_total", "fsnotify event-queue overflows."), int64(ws.Overflows))
	t.add(t.gauge("watcher_directories", "Directories watched."), ws.WatchedDirs)
	t.add(t.gauge("watcher_degraded", "1 while the watch set is incomplete and the cache revalidates by stat."), gaugeFlag(ws.Degraded))
}
