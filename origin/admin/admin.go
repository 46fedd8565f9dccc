package admin

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"segorigin/origin"
	"segorigin/origin/cmcd"
)

// collector exports the server's atomics at scrape time: the hot path only
// increments its own counters, and nothing is registered globally.
type collector struct {
	s *origin.Server
	d *descs
}

// descs are the descriptors of every metric the collector exports,
// one typed field each, so a misspelt name does not compile (a
// string-keyed map would panic at scrape time). add keeps all
// complete for Describe.
type descs struct {
	all              []*prometheus.Desc // every field below, in order
	requests         *prometheus.Desc
	responses        *prometheus.Desc
	byCode           *prometheus.Desc
	build            *prometheus.Desc
	rootAvail        *prometheus.Desc
	rootUnavail      *prometheus.Desc
	kind             *prometheus.Desc
	bad              *prometheus.Desc
	headerLarge      *prometheus.Desc
	multipart        *prometheus.Desc
	rangesIgnore     *prometheus.Desc
	conns            *prometheus.Desc
	acceptEmfile     *prometheus.Desc
	connsRefused     *prometheus.Desc
	inProgress       *prometheus.Desc
	contentEvents    *prometheus.Desc
	contentBytes     *prometheus.Desc
	contentSeconds   *prometheus.Desc
	proxy            *prometheus.Desc
	bodyResp         *prometheus.Desc
	bodyBytes        *prometheus.Desc
	sfFallback       *prometheus.Desc
	truncated        *prometheus.Desc
	aborted          *prometheus.Desc
	auth             *prometheus.Desc
	cacheOps         *prometheus.Desc
	cacheFds         *prometheus.Desc
	cacheInlineFiles *prometheus.Desc
	cacheInlineBytes *prometheus.Desc
	cacheEntries     *prometheus.Desc
	cacheNegb        *prometheus.Desc
	tls              *prometheus.Desc
	coldChecked      *prometheus.Desc
	coldResident     *prometheus.Desc
	coldWaits        *prometheus.Desc
	coldWaitSec      *prometheus.Desc
	coldQueueS       *prometheus.Desc
	rewrite          *prometheus.Desc
	coldEvents       *prometheus.Desc
	coldBytes        *prometheus.Desc
	coldRunning      *prometheus.Desc
	raPredicted      *prometheus.Desc
	raEvents         *prometheus.Desc
	raBytes          *prometheus.Desc
	raRefused        *prometheus.Desc
	raIndexed        *prometheus.Desc
	watchEvents      *prometheus.Desc
	watchOverflw     *prometheus.Desc
	watchDirs        *prometheus.Desc
	watchDegr        *prometheus.Desc
	badPaths         *prometheus.Desc
	logSuppr         *prometheus.Desc
	accessErrs       *prometheus.Desc
	cmcdReq          *prometheus.Desc
	cmcdStarve       *prometheus.Desc
	cmcdBad          *prometheus.Desc
	loopWakeups      *prometheus.Desc
	loopParks        *prometheus.Desc
	loopSends        *prometheus.Desc
	loopShortSends   *prometheus.Desc
	loopTimeouts     *prometheus.Desc
}

func newDescs() *descs {
	d := &descs{}
	d.requests = d.add("requests_total", "Requests that reached the handler.")
	d.responses = d.add("responses_total", "Responses by status class (unparseable requests' 400, 408 and 431 included).", "class")
	d.byCode = d.add("responses_by_code_total", "Responses by status code: the codes the server emits, any other as \"other\".", "code")
	d.build = d.add("build_info", "The running binary: version, Go version and VCS commit; always 1.", "version", "goversion", "commit")
	d.rootAvail = d.add("root_available", "1 while the media root is a readable directory (the one opened at start), as of the last check.")
	d.rootUnavail = d.add("root_unavailable_total", "Times the media root was found missing, replaced or unreadable (each outage counted once).")
	d.kind = d.add("file_responses_total", "File responses (200, 206, 304) by kind of file.", "kind")
	d.bad = d.add("bad_requests_total", "Requests fasthttp could not parse (400, 408, 431).")
	d.headerLarge = d.add("header_too_large_total", "Requests refused with 431.")
	d.multipart = d.add("multipart_responses_total", "multipart/byteranges responses.")
	d.rangesIgnore = d.add("ranges_ignored_total", "Range headers ignored as invalid or over -max-ranges.")
	d.conns = d.add("connections_open", "Plain TCP connections open.")
	d.acceptEmfile = d.add("accept_emfile_total", "Accepts that failed for lack of file descriptors (retried after shedding the cache).")
	d.connsRefused = d.add("connections_refused_total", "Connections closed at accept by -max-conns or -max-conns-per-ip.")
	d.proxy = d.add("proxy_protocol_total", "Connections by PROXY protocol outcome (with -proxy-protocol).", "outcome")
	d.bodyResp = d.add("body_responses_total", "Response bodies by transport path.", "path")
	d.bodyBytes = d.add("body_bytes_total", "Body bytes sent by transport path.", "path")
	d.sfFallback = d.add("sendfile_fallbacks_total", "Responses where the file system refused sendfile and copy served.")
	d.truncated = d.add("truncated_total", "Responses cut short because the file shrank while being sent.")
	d.aborted = d.add("aborted_total", "Responses cut short by the client or a write timeout.")
	d.auth = d.add("auth_total", "Authorization outcomes by reason.", "reason")
	d.rewrite = d.add("query_rewrite_total", "Playlists and manifests answered to a query token: rewritten (the token in every URI in its scope), unchanged (no URI needed it), too_large (over -auth-query-rewrite-max-bytes) and failed (unreadable as a playlist) are served as the file is.", "outcome")
	d.cacheOps = d.add("cache_operations_total", "File cache operations.", "op")
	d.cacheFds = d.add("cache_open_files", "Descriptors the file cache holds open (listed or lent out).")
	d.cacheInlineFiles = d.add("cache_inline_files", "Small files whose bytes the file cache holds in memory (listed or lent out).")
	d.cacheInlineBytes = d.add("cache_inline_bytes", "Bytes of those files: at most -inline-budget.")
	d.cacheEntries = d.add("cache_entries", "Entries listed in the file cache.", "type")
	d.cacheNegb = d.add("cache_negative_bytes", "What the negative entries count against -negative-cache-bytes (name bytes plus a fixed overhead each).")
	d.tls = d.add("tls_events_total", "TLS handshakes, kernel TLS hand-overs and certificate reloads by outcome.", "event")
	d.coldChecked = d.add("cold_checked_total", "Responses whose first window's residency was checked before the header, by kind.", "kind")
	d.coldResident = d.add("cold_resident_total", "Of those, found in the page cache (sent at once), by kind.", "kind")
	d.coldWaits = d.add("cold_waits_total", "Windows that waited for a cold reader (cold reads).")
	d.coldWaitSec = d.add("cold_wait_seconds_total", "Time requests spent waiting for cold readers (queue and read).")
	d.coldQueueS = d.add("cold_queue_wait_seconds_total", "Time cold reads spent queued before a reader took them.")
	d.coldEvents = d.add("cold_events_total", "Cold-read outcomes: refused (503), aborted (mid-body), probe_error, load_error, still_cold, joined.", "event")
	d.coldBytes = d.add("cold_read_bytes_total", "Bytes the cold readers read for waiting requests.")
	d.coldRunning = d.add("cold_readers_busy", "Cold readers reading now.")
	d.raPredicted = d.add("readahead_predicted_total", "Read-ahead predictions handed to the cold readers, by source.", "source")
	d.raEvents = d.add("readahead_total", "What became of read-ahead: issued (read into the page cache), hit, wasted (evicted before its request), unused (never requested), resident (nothing to read), missing, dropped (no room).", "outcome")
	d.raBytes = d.add("readahead_bytes_total", "Bytes read ahead.")
	d.raRefused = d.add("readahead_refused_total", "Read-ahead predictions dropped before any read: outside_root, hidden, unauthorized (the request's token or a public prefix does not cover it), symlink (leads out of the root or to a hidden file), repeated (a CMCD hint inside what was just read).", "reason")
	d.raIndexed = d.add("readahead_indexed_total", "Playlists and sidx boxes parsed for read-ahead, and those that failed.", "result")
	d.watchEvents = d.add("watcher_events_total", "File system events the watcher processed.")
	d.watchOverflw = d.add("watcher_overflows_total", "fsnotify event-queue overflows.")
	d.watchDirs = d.add("watcher_directories", "Directories watched.")
	d.watchDegr = d.add("watcher_degraded", "1 while the watch set is incomplete and the cache revalidates by stat.")
	d.badPaths = d.add("bad_paths_total", "Request paths refused with 400 (bad escape, control byte, climbing above the root).")
	d.logSuppr = d.add("log_suppressed_total", "Log lines held back by rate limiting, by kind (their events are still counted by their own metrics).", "kind")
	d.inProgress = d.add("in_progress_total", "Requests for a file still being written (-settle): answered 503, or with -in-progress uncached its bytes with no-store.")
	d.contentEvents = d.add("content_etag_total", "Content validators (-etag content): hashed, attr_loaded (read from the extended attribute), attr_unwritable (kept in memory only), attr_read_error, changed (file written while hashed), read_error, refused (503: not known by -cold-deadline).", "event")
	d.contentBytes = d.add("content_hash_bytes_total", "Bytes hashed for content validators.")
	d.contentSeconds = d.add("content_hash_seconds_total", "Time spent hashing for content validators.")
	d.accessErrs = d.add("access_log_errors_total", "Access log lines the log writer refused.")
	d.cmcdReq = d.add("cmcd_requests_total", "GET and HEAD requests carrying CMCD (CTA-5004), by object type (ot) and streaming format (sf); none when not given.", "object_type", "streaming_format")
	d.cmcdStarve = d.add("cmcd_buffer_starvation_total", "Requests whose CMCD says the player's buffer ran dry since its previous request (bs).")
	d.cmcdBad = d.add("cmcd_malformed_total", "Requests with a CMCD entry dropped as malformed (the request is served as if it were absent).")
	d.loopWakeups = d.add("loop_wakeups_total", "Event-loop wake-ups (epoll_wait returns), all loops.")
	d.loopParks = d.add("loop_parks_total", "Times an idle event loop parked on Go's netpoller.")
	d.loopSends = d.add("loop_sends_total", "sendmsg and sendfile calls of the event loops.")
	d.loopShortSends = d.add("loop_short_sends_total", "Event-loop sends that filled the socket buffer (the connection then waits until it is writable).")
	d.loopTimeouts = d.add("loop_timeouts_total", "Connections the event loops closed for a read, idle or write timeout.")
	return d
}

// add makes a descriptor named segorigin_<name> and lists it in d.all.
func (d *descs) add(name, help string, labels ...string) *prometheus.Desc {
	desc := prometheus.NewDesc("segorigin_"+name, help, labels, nil)
	d.all = append(d.all, desc)
	return desc
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	d := c.d
	counter := func(desc *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	counter(d.requests, st.Requests)
	for class, v := range map[string]int64{"2xx": st.Status2xx, "3xx": st.Status3xx, "4xx": st.Status4xx, "5xx": st.Status5xx} {
		counter(d.responses, v, class)
	}
	for i, v := range st.ByStatus {
		counter(d.byCode, v, origin.StatusLabel(i))
	}
	b := c.s.Build()
	gauge(d.build, 1, b.Version, b.GoVersion, b.Commit)
	avail := 1.0
	if !c.s.RootAvailable() {
		avail = 0
	}
	gauge(d.rootAvail, avail)
	counter(d.rootUnavail, st.RootUnavailable)
	for k, v := range st.Kinds {
		counter(d.kind, v, origin.KindName(k))
	}
	counter(d.bad, st.BadRequests)
	counter(d.headerLarge, st.HeaderTooLarge)
	counter(d.multipart, st.Multipart)
	counter(d.rangesIgnore, st.RangesIgnored)
	counter(d.inProgress, st.InProgress)
	ct := st.Content
	for event, v := range map[string]int64{
		"hashed": ct.Hashed, "attr_loaded": ct.FromAttr, "attr_unwritable": ct.AttrFailed, "attr_read_error": ct.AttrReadErr,
		"changed": ct.Changed, "read_error": ct.ReadErrors, "refused": ct.Refused,
	} {
		counter(d.contentEvents, v, event)
	}
	counter(d.contentBytes, ct.HashBytes)
	ch <- prometheus.MustNewConstMetric(d.contentSeconds, prometheus.CounterValue, float64(ct.HashNanos)/1e9)
	gauge(d.conns, float64(st.ConnsOpen))
	counter(d.connsRefused, st.ConnsRefused)
	for outcome, v := range map[string]int64{
		"accepted": st.ProxyAccepted, "local": st.ProxyLocal, "absent": st.ProxyAbsent,
		"missing": st.ProxyMissing, "untrusted": st.ProxyUntrusted, "malformed": st.ProxyMalformed,
	} {
		counter(d.proxy, v, outcome)
	}
	t := st.Transport
	for path, v := range map[string][2]int64{
		"sendfile": {t.SendfileResponses, t.SendfileBytes},
		"ktls":     {t.KTLSResponses, t.KTLSBytes},
		"inline":   {t.InlineResponses, t.InlineBytes},
		"copy":     {t.CopyResponses, t.CopyBytes},
	} {
		counter(d.bodyResp, v[0], path)
		counter(d.bodyBytes, v[1], path)
	}
	counter(d.sfFallback, t.SendfileFallbacks)
	counter(d.truncated, t.Truncated)
	counter(d.aborted, t.Aborted)
	for r := range origin.NumAuthReasons {
		counter(d.auth, st.Auth.ByReason[r], r.String())
	}
	for outcome, v := range map[string]int64{
		"rewritten": st.Rewrite.Rewritten, "unchanged": st.Rewrite.Unchanged,
		"too_large": st.Rewrite.TooLarge, "failed": st.Rewrite.Failed,
	} {
		counter(d.rewrite, v, outcome)
	}
	ts := st.TLS
	for ev, v := range map[string]int64{
		"handshake": ts.Handshakes, "handshake_error": ts.HandshakeErrors,
		"ktls_offloaded": ts.KTLSOffloaded, "ktls_unsupported": ts.KTLSUnsupported,
		"ktls_ulp_failed": ts.KTLSULPFailed, "ktls_tx_failed": ts.KTLSTXFailed,
		"ktls_write_denied": ts.KTLSWriteDenied, "cert_reload": ts.CertReloads, "cert_reload_failed": ts.CertReloadFails,
	} {
		counter(d.tls, v, ev)
	}
	counter(d.acceptEmfile, st.AcceptEMFILE)
	counter(d.badPaths, st.BadPaths)
	counter(d.accessErrs, st.AccessLogErrors)
	for kind, v := range c.s.LogSuppressed() {
		counter(d.logSuppr, v, kind)
	}
	collectCMCD(d, &st.CMCD, counter)
	collectLoop(d, &st.Loop, counter)
	if ps := c.s.ColdPoolStats(); ps != nil {
		cold := st.Cold
		for k := range cold.Checked {
			counter(d.coldChecked, cold.Checked[k], origin.KindName(k))
			counter(d.coldResident, cold.Resident[k], origin.KindName(k))
		}
		counter(d.coldWaits, cold.Waited)
		ch <- prometheus.MustNewConstMetric(d.coldWaitSec, prometheus.CounterValue, float64(cold.WaitNanos)/1e9)
		ch <- prometheus.MustNewConstMetric(d.coldQueueS, prometheus.CounterValue, float64(ps.QueueWaitNanos.Load())/1e9)
		for ev, v := range map[string]int64{
			"refused": cold.Refused, "aborted": cold.Aborted, "probe_error": cold.ProbeErrs,
			"load_error": cold.LoadErrs, "still_cold": cold.StillCold, "joined": ps.Joined.Load(),
		} {
			counter(d.coldEvents, v, ev)
		}
		counter(d.coldBytes, cold.LoadBytes)
		gauge(d.coldRunning, float64(ps.Running.Load()))
	}
	if ra, ok := c.s.ReadAheadStats(); ok {
		for src, v := range ra.Predicted {
			counter(d.raPredicted, v, origin.ReadAheadSource(src))
		}
		for outcome, v := range map[string]int64{
			"issued": ra.Issued, "hit": ra.Hit, "wasted": ra.Wasted, "unused": ra.Unused,
			"resident": ra.Resident, "missing": ra.Missing, "dropped": ra.Dropped,
		} {
			counter(d.raEvents, v, outcome)
		}
		counter(d.raBytes, ra.Bytes)
		for r, v := range ra.Refused {
			counter(d.raRefused, v, origin.ReadAheadRefusal(r))
		}
		counter(d.raIndexed, ra.Indexed, "ok")
		counter(d.raIndexed, ra.IndexErrs, "error")
	}
	cs := c.s.CacheStats()
	for op, v := range map[string]uint64{
		"hit": cs.Hits, "miss": cs.Misses, "negative_hit": cs.NegativeHits, "eviction": cs.Evictions,
		"invalidation": cs.Invalidations, "revalidation": cs.Revalidations, "stale": cs.Stale, "emfile": cs.EMFILE,
		"inline_over_budget": cs.InlineOverBudget, "inline_changed": cs.InlineChanged,
	} {
		counter(d.cacheOps, int64(v), op)
	}
	gauge(d.cacheFds, float64(cs.OpenFiles))
	gauge(d.cacheInlineFiles, float64(cs.InlineFiles))
	gauge(d.cacheInlineBytes, float64(cs.InlineBytes))
	gauge(d.cacheEntries, float64(cs.Entries), "file")
	gauge(d.cacheEntries, float64(cs.NegativeEntries), "negative")
	gauge(d.cacheNegb, float64(cs.NegativeBytes))
	if ws, ok := c.s.WatchStats(); ok {
		counter(d.watchEvents, int64(ws.Events))
		counter(d.watchOverflw, int64(ws.Overflows))
		gauge(d.watchDirs, float64(ws.WatchedDirs))
		degraded := 0.0
		if ws.Degraded {
			degraded = 1
		}
		gauge(d.watchDegr, degraded)
	}
}

// collectCMCD exports the CMCD counters; object type and streaming format
// pairs no request carried are left out.
func collectCMCD(d *descs, st *origin.CMCDStats, counter func(*prometheus.Desc, int64, ...string)) {
	for ot := range st.Requests {
		for sf := range st.Requests[ot] {
			if v := st.Requests[ot][sf]; v > 0 {
				counter(d.cmcdReq, v, cmcdLabel(cmcd.ObjectType(ot).String()), cmcdLabel(cmcd.StreamingFormat(sf).String()))
			}
		}
	}
	counter(d.cmcdStarve, st.Starvation)
	counter(d.cmcdBad, st.Malformed)
}

func collectLoop(d *descs, st *origin.LoopStats, counter func(*prometheus.Desc, int64, ...string)) {
	counter(d.loopWakeups, st.Wakeups)
	counter(d.loopParks, st.Parks)
	counter(d.loopSends, st.Sends)
	counter(d.loopShortSends, st.ShortSends)
	counter(d.loopTimeouts, st.Timeouts)
}

func cmcdLabel(token string) string {
	if token == "" {
		return "none"
	}
	return token
}

// Handler serves the admin endpoints of s, for a listener off the public
// port: /metrics (Prometheus), /healthz (the process answers), /readyz
// (200 when ready reports the process takes traffic, false while it shuts
// down, and the media root is available: see origin.Server.CheckRoot) and,
// with Config.AdminPprof, /debug/pprof/.
func Handler(s *origin.Server, ready func() bool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s: s, d: newDescs()}, s.Latency(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && !ready() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if err := s.CheckRoot(); err != nil {
			http.Error(w, "media root unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if !s.AdminPprof() {
		return mux
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
