package origin

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"segorigin/origin/conn"
	"segorigin/watcher"
)

// Stats are the server's counters. They are plain atomics, read by tests
// and by the metrics exporter; nothing global.
type Stats struct {
	Requests        atomic.Int64    // requests that reached the handler
	Status2xx       atomic.Int64    // 200, 204, 206 answers
	Status3xx       atomic.Int64    // 304 answers
	Status4xx       atomic.Int64    // client errors answered by the handler
	Status5xx       atomic.Int64    // server errors (503 on EMFILE included)
	BadRequests     atomic.Int64    // requests fasthttp could not parse (400/408/431)
	HeaderTooLarge  atomic.Int64    // of those, 431 answers
	Multipart       atomic.Int64    // multipart/byteranges answers
	RangesIgnored   atomic.Int64    // Range headers ignored as invalid or over the cap
	Kinds           [3]atomic.Int64 // file responses (200, 206, 304) by kind: other, playlist, segment
	BadPaths        atomic.Int64    // request paths refused with 400 (bad escape, control byte, climbing above the root)
	AccessLogErrors atomic.Int64    // access log lines the writer refused
	CMCD            CMCDStats       // requests carrying CMCD

	// ConnsOpen, ConnsRefused, AcceptEMFILE: counted by the listeners'
	// gate (origin/conn).
	conn.ListenerStats

	Transport TransportStats
	Auth      AuthStats
	TLS       TLSStats
}

// TransportStats count which body path served each response body, and the
// bytes each sent (framing of multipart bodies included).
type TransportStats struct {
	SendfileResponses atomic.Int64 // bodies sent by sendfile(2) on plain TCP
	SendfileBytes     atomic.Int64
	KTLSResponses     atomic.Int64 // bodies sent by sendfile(2) on a kTLS socket
	KTLSBytes         atomic.Int64
	CopyResponses     atomic.Int64 // bodies sent by pread into a pooled buffer and write
	CopyBytes         atomic.Int64
	SendfileFallbacks atomic.Int64 // sendfile refused by the file system (EINVAL/ENOSYS): served by copy
	Truncated         atomic.Int64 // files that shrank while being sent: connection closed
	Aborted           atomic.Int64 // bodies cut short by the client or a write timeout
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
// access_log.
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
