package admin

import (
	"net/http"
	"net/http/pprof"
	"sync/atomic"

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
}

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("segorigin_"+name, help, labels, nil)
}

var metricDescs = map[string]*prometheus.Desc{
	"requests":           newDesc("requests_total", "Requests that reached the handler."),
	"responses":          newDesc("responses_total", "Responses by status class (unparseable requests' 400, 408 and 431 included).", "class"),
	"by_code":            newDesc("responses_by_code_total", "Responses by status code: the codes the server emits, any other as \"other\".", "code"),
	"build":              newDesc("build_info", "The running binary: version, Go version and VCS commit; always 1.", "version", "goversion", "commit"),
	"root_avail":         newDesc("root_available", "1 while the media root is a readable directory (the one opened at start), as of the last check."),
	"root_unavail":       newDesc("root_unavailable_total", "Times the media root was found missing, replaced or unreadable (each outage counted once)."),
	"kind":               newDesc("file_responses_total", "File responses (200, 206, 304) by kind of file.", "kind"),
	"bad":                newDesc("bad_requests_total", "Requests fasthttp could not parse (400, 408, 431)."),
	"header_large":       newDesc("header_too_large_total", "Requests refused with 431."),
	"multipart":          newDesc("multipart_responses_total", "multipart/byteranges responses."),
	"ranges_ignore":      newDesc("ranges_ignored_total", "Range headers ignored as invalid or over -max-ranges."),
	"conns":              newDesc("connections_open", "Plain TCP connections open."),
	"accept_emfile":      newDesc("accept_emfile_total", "Accepts that failed for lack of file descriptors (retried after shedding the cache)."),
	"conns_refused":      newDesc("connections_refused_total", "Connections closed at accept by -max-conns or -max-conns-per-ip."),
	"proxy":              newDesc("proxy_protocol_total", "Connections by PROXY protocol outcome (with -proxy-protocol).", "outcome"),
	"body_resp":          newDesc("body_responses_total", "Response bodies by transport path.", "path"),
	"body_bytes":         newDesc("body_bytes_total", "Body bytes sent by transport path.", "path"),
	"sf_fallback":        newDesc("sendfile_fallbacks_total", "Responses where the file system refused sendfile and copy served."),
	"truncated":          newDesc("truncated_total", "Responses cut short because the file shrank while being sent."),
	"aborted":            newDesc("aborted_total", "Responses cut short by the client or a write timeout."),
	"auth":               newDesc("auth_total", "Authorization outcomes by reason.", "reason"),
	"cache_ops":          newDesc("cache_operations_total", "File cache operations.", "op"),
	"cache_fds":          newDesc("cache_open_files", "Descriptors the file cache holds open (listed or lent out)."),
	"cache_inline_files": newDesc("cache_inline_files", "Small files whose bytes the file cache holds in memory (listed or lent out)."),
	"cache_inline_bytes": newDesc("cache_inline_bytes", "Bytes of those files: at most -inline-budget."),
	"cache_entries":      newDesc("cache_entries", "Entries listed in the file cache.", "type"),
	"cache_negb":         newDesc("cache_negative_bytes", "What the negative entries count against -negative-cache-bytes (name bytes plus a fixed overhead each)."),
	"tls":                newDesc("tls_events_total", "TLS handshakes, kernel TLS hand-overs and certificate reloads by outcome.", "event"),
	"cold_checked":       newDesc("cold_checked_total", "Responses whose first window's residency was checked before the header, by kind.", "kind"),
	"cold_resident":      newDesc("cold_resident_total", "Of those, found in the page cache (sent at once), by kind.", "kind"),
	"cold_waits":         newDesc("cold_waits_total", "Windows that waited for a cold reader (cold reads)."),
	"cold_wait_sec":      newDesc("cold_wait_seconds_total", "Time requests spent waiting for cold readers (queue and read)."),
	"cold_queue_s":       newDesc("cold_queue_wait_seconds_total", "Time cold reads spent queued before a reader took them."),
	"cold_events":        newDesc("cold_events_total", "Cold-read outcomes: refused (503), aborted (mid-body), probe_error, load_error, still_cold, joined.", "event"),
	"cold_bytes":         newDesc("cold_read_bytes_total", "Bytes the cold readers read for waiting requests."),
	"cold_running":       newDesc("cold_readers_busy", "Cold readers reading now."),
	"ra_predicted":       newDesc("readahead_predicted_total", "Read-ahead predictions handed to the cold readers, by source.", "source"),
	"ra_events":          newDesc("readahead_total", "What became of read-ahead: issued (read into the page cache), hit, wasted (evicted before its request), unused (never requested), resident (nothing to read), missing, dropped (no room).", "outcome"),
	"ra_bytes":           newDesc("readahead_bytes_total", "Bytes read ahead."),
	"ra_indexed":         newDesc("readahead_indexed_total", "Playlists and sidx boxes parsed for read-ahead, and those that failed.", "result"),
	"watch_events":       newDesc("watcher_events_total", "File system events the watcher processed."),
	"watch_overflw":      newDesc("watcher_overflows_total", "fsnotify event-queue overflows."),
	"watch_dirs":         newDesc("watcher_directories", "Directories watched."),
	"watch_degr":         newDesc("watcher_degraded", "1 while the watch set is incomplete and the cache revalidates by stat."),
	"bad_paths":          newDesc("bad_paths_total", "Request paths refused with 400 (bad escape, control byte, climbing above the root)."),
	"log_suppr":          newDesc("log_suppressed_total", "Log lines held back by rate limiting, by kind (their events are still counted by their own metrics).", "kind"),
	"access_errs":        newDesc("access_log_errors_total", "Access log lines the log writer refused."),
	"cmcd_req":           newDesc("cmcd_requests_total", "GET and HEAD requests carrying CMCD (CTA-5004), by object type (ot) and streaming format (sf); none when not given.", "object_type", "streaming_format"),
	"cmcd_starve":        newDesc("cmcd_buffer_starvation_total", "Requests whose CMCD says the player's buffer ran dry since its previous request (bs)."),
	"cmcd_bad":           newDesc("cmcd_malformed_total", "Requests with a CMCD entry dropped as malformed (the request is served as if it were absent)."),
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range metricDescs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	counter := func(name string, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(metricDescs[name], prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(metricDescs[name], prometheus.GaugeValue, v, labels...)
	}
	counter("requests", st.Requests.Load())
	for class, v := range map[string]*atomic.Int64{"2xx": &st.Status2xx, "3xx": &st.Status3xx, "4xx": &st.Status4xx, "5xx": &st.Status5xx} {
		counter("responses", v.Load(), class)
	}
	for i := range st.ByStatus {
		counter("by_code", st.ByStatus[i].Load(), origin.StatusLabel(i))
	}
	b := c.s.Build()
	gauge("build", 1, b.Version, b.GoVersion, b.Commit)
	avail := 1.0
	if !c.s.RootAvailable() {
		avail = 0
	}
	gauge("root_avail", avail)
	counter("root_unavail", st.RootUnavailable.Load())
	for k := range st.Kinds {
		counter("kind", st.Kinds[k].Load(), origin.KindName(k))
	}
	counter("bad", st.BadRequests.Load())
	counter("header_large", st.HeaderTooLarge.Load())
	counter("multipart", st.Multipart.Load())
	counter("ranges_ignore", st.RangesIgnored.Load())
	gauge("conns", float64(st.ConnsOpen.Load()))
	counter("conns_refused", st.ConnsRefused.Load())
	for outcome, v := range map[string]*atomic.Int64{
		"accepted": &st.ProxyAccepted, "local": &st.ProxyLocal, "absent": &st.ProxyAbsent,
		"missing": &st.ProxyMissing, "untrusted": &st.ProxyUntrusted, "malformed": &st.ProxyMalformed,
	} {
		counter("proxy", v.Load(), outcome)
	}
	t := &st.Transport
	for path, v := range map[string][2]*atomic.Int64{
		"sendfile": {&t.SendfileResponses, &t.SendfileBytes},
		"ktls":     {&t.KTLSResponses, &t.KTLSBytes},
		"inline":   {&t.InlineResponses, &t.InlineBytes},
		"copy":     {&t.CopyResponses, &t.CopyBytes},
	} {
		counter("body_resp", v[0].Load(), path)
		counter("body_bytes", v[1].Load(), path)
	}
	counter("sf_fallback", t.SendfileFallbacks.Load())
	counter("truncated", t.Truncated.Load())
	counter("aborted", t.Aborted.Load())
	for r := range origin.NumAuthReasons {
		counter("auth", st.Auth.ByReason[r].Load(), r.String())
	}
	ts := &st.TLS
	for ev, v := range map[string]*atomic.Int64{
		"handshake": &ts.Handshakes, "handshake_error": &ts.HandshakeErrors,
		"ktls_offloaded": &ts.KTLSOffloaded, "ktls_unsupported": &ts.KTLSUnsupported,
		"ktls_ulp_failed": &ts.KTLSULPFailed, "ktls_tx_failed": &ts.KTLSTXFailed,
		"ktls_write_denied": &ts.KTLSWriteDenied, "cert_reload": &ts.CertReloads, "cert_reload_failed": &ts.CertReloadFails,
	} {
		counter("tls", v.Load(), ev)
	}
	counter("accept_emfile", st.AcceptEMFILE.Load())
	counter("bad_paths", st.BadPaths.Load())
	counter("access_errs", st.AccessLogErrors.Load())
	for kind, v := range c.s.LogSuppressed() {
		counter("log_suppr", v, kind)
	}
	collectCMCD(&st.CMCD, counter)
	if ps := c.s.ColdPoolStats(); ps != nil {
		cold := &st.Cold
		for k := range cold.Checked {
			counter("cold_checked", cold.Checked[k].Load(), origin.KindName(k))
			counter("cold_resident", cold.Resident[k].Load(), origin.KindName(k))
		}
		counter("cold_waits", cold.Waited.Load())
		ch <- prometheus.MustNewConstMetric(metricDescs["cold_wait_sec"], prometheus.CounterValue, float64(cold.WaitNanos.Load())/1e9)
		ch <- prometheus.MustNewConstMetric(metricDescs["cold_queue_s"], prometheus.CounterValue, float64(ps.QueueWaitNanos.Load())/1e9)
		for ev, v := range map[string]int64{
			"refused": cold.Refused.Load(), "aborted": cold.Aborted.Load(), "probe_error": cold.ProbeErrs.Load(),
			"load_error": cold.LoadErrs.Load(), "still_cold": cold.StillCold.Load(), "joined": ps.Joined.Load(),
		} {
			counter("cold_events", v, ev)
		}
		counter("cold_bytes", cold.LoadBytes.Load())
		gauge("cold_running", float64(ps.Running.Load()))
	}
	if ra := c.s.ReadAheadStats(); ra != nil {
		for src := range ra.Predicted {
			counter("ra_predicted", ra.Predicted[src].Load(), origin.ReadAheadSource(src))
		}
		for outcome, v := range map[string]*atomic.Int64{
			"issued": &ra.Issued, "hit": &ra.Hit, "wasted": &ra.Wasted, "unused": &ra.Unused,
			"resident": &ra.Resident, "missing": &ra.Missing, "dropped": &ra.Dropped,
		} {
			counter("ra_events", v.Load(), outcome)
		}
		counter("ra_bytes", ra.Bytes.Load())
		counter("ra_indexed", ra.Indexed.Load(), "ok")
		counter("ra_indexed", ra.IndexErrs.Load(), "error")
	}
	cs := c.s.CacheStats()
	for op, v := range map[string]uint64{
		"hit": cs.Hits, "miss": cs.Misses, "negative_hit": cs.NegativeHits, "eviction": cs.Evictions,
		"invalidation": cs.Invalidations, "revalidation": cs.Revalidations, "stale": cs.Stale, "emfile": cs.EMFILE,
		"inline_over_budget": cs.InlineOverBudget, "inline_changed": cs.InlineChanged,
	} {
		counter("cache_ops", int64(v), op)
	}
	gauge("cache_fds", float64(cs.OpenFiles))
	gauge("cache_inline_files", float64(cs.InlineFiles))
	gauge("cache_inline_bytes", float64(cs.InlineBytes))
	gauge("cache_entries", float64(cs.Entries), "file")
	gauge("cache_entries", float64(cs.NegativeEntries), "negative")
	gauge("cache_negb", float64(cs.NegativeBytes))
	if ws, ok := c.s.WatchStats(); ok {
		counter("watch_events", int64(ws.Events))
		counter("watch_overflw", int64(ws.Overflows))
		gauge("watch_dirs", float64(ws.WatchedDirs))
		degraded := 0.0
		if ws.Degraded {
			degraded = 1
		}
		gauge("watch_degr", degraded)
	}
}

// collectCMCD exports the CMCD counters; object type and streaming format
// pairs no request carried are left out.
func collectCMCD(st *origin.CMCDStats, counter func(string, int64, ...string)) {
	for ot := range st.Requests {
		for sf := range st.Requests[ot] {
			if v := st.Requests[ot][sf].Load(); v > 0 {
				counter("cmcd_req", v, cmcdLabel(cmcd.ObjectType(ot).String()), cmcdLabel(cmcd.StreamingFormat(sf).String()))
			}
		}
	}
	counter("cmcd_starve", st.Starvation.Load())
	counter("cmcd_bad", st.Malformed.Load())
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
	reg.MustRegister(collector{s: s}, s.Latency(),
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
