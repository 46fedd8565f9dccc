package origin

import (
	"sync/atomic"

	"segorigin/origin/cmcd"
	"segorigin/origin/conn"
)

// Stats is a snapshot of the server's counters, as Server.Stats returns
// it: plain integers, copied from the live atomics; call Server.Stats again
// to see new counts. Counters only grow; ConnsOpen is a level.
type Stats struct {
	Requests        int64                       // requests that reached the handler
	Status2xx       int64                       // 2xx responses (200, 204, 206)
	Status3xx       int64                       // 3xx responses (304)
	Status4xx       int64                       // 4xx responses, unparseable requests' included
	Status5xx       int64                       // 5xx responses (503 on EMFILE included)
	ByStatus        [len(statusCodes) + 1]int64 // responses by code, as statusCodes; the last counts any other code
	BadRequests     int64                       // requests fasthttp could not parse (400/408/431)
	HeaderTooLarge  int64                       // of those, 431 answers
	Multipart       int64                       // multipart/byteranges answers
	RangesIgnored   int64                       // Range headers ignored as invalid or over the cap
	Kinds           [3]int64                    // file responses (200, 206, 304) by kind: other, playlist, segment
	RootUnavailable int64                       // times the media root was found missing, replaced or unreadable
	BadPaths        int64                       // request paths refused with 400 (bad escape, control byte, climbing above the root)
	AccessLogErrors int64                       // access log lines the writer refused
	InProgress      int64                       // requests for a file still being written (503, or bytes with no-store)
	CMCD            CMCDStats                   // requests carrying CMCD

	// ConnsOpen, ConnsRefused, AcceptEMFILE, Proxy*: counted by the
	// listeners' gate (origin/conn).
	ListenerStats

	Transport TransportStats
	Auth      AuthStats
	Rewrite   RewriteStats // playlists and manifests answered to a query token (Auth.QueryRewrite)
	TLS       TLSStats
	Cold      ColdStats
	ReadAhead ReadAheadStats // zero when read-ahead is off
	Loop      LoopStats      // zero where no event loop serves
	Content   ContentStats   // zero unless -etag content
}

// LoopStats count what the event loops did, all listeners together.
type LoopStats struct {
	Wakeups    int64 // epoll_wait returns
	Parks      int64 // waits an idle loop made on Go's netpoller
	Sends      int64 // sendmsg and sendfile calls
	ShortSends int64 // of those, sends that filled the socket buffer (the connection then waits to be writable)
	Timeouts   int64 // connections closed by a read, idle or write timeout
}

// ContentStats count content validators (-etag content).
type ContentStats struct {
	Hashed      int64 // files hashed
	HashBytes   int64 // bytes they held
	HashNanos   int64 // time spent hashing
	FromAttr    int64 // validators read from the extended attribute (no hash)
	AttrFailed  int64 // attributes that could not be written (kept in memory only)
	Changed     int64 // hashes thrown away: the file changed while hashed
	Refused     int64 // requests answered 503: the hash was not known by the cold deadline
	ReadErrors  int64 // hashes that failed to read the file
	AttrReadErr int64 // attributes that could not be read (hashed instead)
}

// ListenerStats is a snapshot of conn.ListenerStats.
type ListenerStats struct {
	ConnsOpen    int64 // TCP connections open now (HTTP and HTTPS)
	ConnsRefused int64 // connections closed at accept: over max-conns or max-conns-per-ip
	AcceptEMFILE int64 // accepts that failed for lack of descriptors (retried)

	// PROXY protocol outcomes, one per connection that could carry a header.
	ProxyAccepted  int64 // a trusted peer's header named the client
	ProxyLocal     int64 // a trusted peer's header named no client (v2 LOCAL, v1 UNKNOWN)
	ProxyAbsent    int64 // a trusted peer sent none where one is optional
	ProxyMissing   int64 // a trusted peer sent none where one is required: closed
	ProxyUntrusted int64 // a peer outside the trusted list sent one: closed
	ProxyMalformed int64 // a trusted peer's header broke the specification: closed
}

// TransportStats count which body path served each response body, and the
// bytes each sent (framing of multipart bodies included).
type TransportStats struct {
	SendfileResponses int64 // bodies sent by sendfile(2) on plain TCP
	SendfileBytes     int64
	KTLSResponses     int64 // bodies sent by sendfile(2) on a kTLS socket
	KTLSBytes         int64
	InlineResponses   int64 // bodies sent from the cache entry's memory, with the header in one send
	InlineBytes       int64
	CopyResponses     int64 // bodies sent by pread into a pooled buffer and write
	CopyBytes         int64
	SendfileFallbacks int64 // sendfile refused by the file system (EINVAL/ENOSYS): served by copy
	Truncated         int64 // files that shrank while being sent: connection closed
	Aborted           int64 // bodies cut short by the client or a write timeout
}

// AuthStats count authorization outcomes, indexed by AuthReason.
type AuthStats struct {
	ByReason [NumAuthReasons]int64
}

// RewriteStats count what became of playlists and manifests answered to
// a query token with Auth.QueryRewrite on.
type RewriteStats struct {
	Rewritten int64 // served with the token written into their URIs
	Unchanged int64 // no URI needed it (none listed, or none in the token's scope): served as the file is
	TooLarge  int64 // over Auth.QueryRewriteMaxBytes: served unrewritten
	Failed    int64 // not a playlist or manifest the rewriter could read: served unrewritten
}

// TLSStats count handshakes, the kTLS hand-over per outcome, and
// certificate reloads: a snapshot of conn.TLSStats.
type TLSStats struct {
	Handshakes      int64 // completed TLS handshakes
	HandshakeErrors int64 // failed handshakes (client left, no common parameters, timeout)
	KTLSOffloaded   int64 // connections whose transmit direction the kernel took over
	KTLSUnsupported int64 // offload attempted but the version, cipher or key material did not allow it
	KTLSULPFailed   int64 // setsockopt(TCP_ULP, "tls") refused: userspace TLS
	KTLSTXFailed    int64 // setsockopt(SOL_TLS, TLS_TX) refused: userspace TLS
	KTLSWriteDenied int64 // crypto/tls tried to write after the hand-over: connection closed
	CertReloads     int64 // certificate pairs loaded after start
	CertReloadFails int64 // reloads that failed (the previous pair stays in service)
}

// ColdStats count the cold-read path: how often a span to be sent was
// resident already, and how often it had to wait for a pool reader.
type ColdStats struct {
	Checked   [3]int64 // first windows checked before the header, by kind
	Resident  [3]int64 // of those, found resident: sent at once, by kind
	Waited    int64    // windows (first or later) that waited for a pool reader
	Refused   int64    // requests answered 503 + Retry-After: queue full or deadline passed
	Aborted   int64    // later windows not resident in time: connection closed mid-body
	ProbeErrs int64    // residency checks the kernel refused (treated as cold)
	LoadErrs  int64    // pool reads that failed (the send then reports the error)
	LoadBytes int64    // bytes the pool read for waiting requests
	StillCold int64    // windows not resident even after the pool read them
	WaitNanos int64    // sum of request-side waits for the pool (queue + read)
	WaitCount int64    // waits summed in WaitNanos
}

// ReadAheadStats count predictions and what became of them.
type ReadAheadStats struct {
	Predicted [numSources]int64  // predictions handed to the pool, by source
	Dropped   int64              // predictions the pool had no room for
	Refused   [numRefusals]int64 // predictions dropped before any read, by reason (ReadAheadRefusal names them)
	Missing   int64              // predicted objects that do not exist (a numbering guess past the end)
	Resident  int64              // predicted objects already resident: nothing to read
	Issued    int64              // predictions read into the page cache
	Bytes     int64              // bytes those reads covered
	Hit       int64              // requests for a read-ahead object that found it resident
	Wasted    int64              // requests for a read-ahead object that found it evicted again
	Unused    int64              // read-ahead objects never requested before being forgotten
	Indexed   int64              // playlists and sidx boxes parsed
	IndexErrs int64              // playlists and sidx boxes that could not be read or parsed
}

// CMCDStats count requests that carried CMCD, with labels of low
// cardinality only (no session or content IDs).
type CMCDStats struct {
	Requests   [cmcd.NumObjectTypes][cmcd.NumStreamingFormats]int64 // GET/HEAD with CMCD, by ot and sf
	Starvation int64                                                // of those, with bs: the player's buffer ran dry
	Malformed  int64                                                // of those, with an entry dropped as malformed
}

// loadAll copies each counter of src into dst, which has src's length.
func loadAll(dst []int64, src []atomic.Int64) {
	for i := range src {
		dst[i] = src[i].Load()
	}
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Requests:        c.Requests.Load(),
		Status2xx:       c.Status2xx.Load(),
		Status3xx:       c.Status3xx.Load(),
		Status4xx:       c.Status4xx.Load(),
		Status5xx:       c.Status5xx.Load(),
		BadRequests:     c.BadRequests.Load(),
		HeaderTooLarge:  c.HeaderTooLarge.Load(),
		Multipart:       c.Multipart.Load(),
		RangesIgnored:   c.RangesIgnored.Load(),
		RootUnavailable: c.RootUnavailable.Load(),
		BadPaths:        c.BadPaths.Load(),
		AccessLogErrors: c.AccessLogErrors.Load(),
		InProgress:      c.InProgress.Load(),
		CMCD:            c.CMCD.snapshot(),
		ListenerStats:   listenerSnapshot(&c.ListenerStats),
		Transport:       c.Transport.snapshot(),
		Rewrite: RewriteStats{Rewritten: c.Rewrite.Rewritten.Load(), Unchanged: c.Rewrite.Unchanged.Load(),
			TooLarge: c.Rewrite.TooLarge.Load(), Failed: c.Rewrite.Failed.Load()},
		TLS:       tlsSnapshot(&c.TLS),
		Cold:      c.Cold.snapshot(),
		ReadAhead: c.ReadAhead.snapshot(),
		Content: ContentStats{
			Hashed: c.Content.Hashed.Load(), HashBytes: c.Content.HashBytes.Load(), HashNanos: c.Content.HashNanos.Load(),
			FromAttr: c.Content.FromAttr.Load(), AttrFailed: c.Content.AttrFailed.Load(), Changed: c.Content.Changed.Load(),
			Refused: c.Content.Refused.Load(), ReadErrors: c.Content.ReadErrors.Load(), AttrReadErr: c.Content.AttrReadErr.Load(),
		},
	}
	loadAll(s.ByStatus[:], c.ByStatus[:])
	loadAll(s.Kinds[:], c.Kinds[:])
	loadAll(s.Auth.ByReason[:], c.Auth.ByReason[:])
	return s
}

func listenerSnapshot(l *conn.ListenerStats) ListenerStats {
	return ListenerStats{
		ConnsOpen: l.ConnsOpen.Load(), ConnsRefused: l.ConnsRefused.Load(), AcceptEMFILE: l.AcceptEMFILE.Load(),
		ProxyAccepted: l.ProxyAccepted.Load(), ProxyLocal: l.ProxyLocal.Load(), ProxyAbsent: l.ProxyAbsent.Load(),
		ProxyMissing: l.ProxyMissing.Load(), ProxyUntrusted: l.ProxyUntrusted.Load(), ProxyMalformed: l.ProxyMalformed.Load(),
	}
}

func tlsSnapshot(t *conn.TLSStats) TLSStats {
	return TLSStats{
		Handshakes: t.Handshakes.Load(), HandshakeErrors: t.HandshakeErrors.Load(),
		KTLSOffloaded: t.KTLSOffloaded.Load(), KTLSUnsupported: t.KTLSUnsupported.Load(),
		KTLSULPFailed: t.KTLSULPFailed.Load(), KTLSTXFailed: t.KTLSTXFailed.Load(),
		KTLSWriteDenied: t.KTLSWriteDenied.Load(),
		CertReloads:     t.CertReloads.Load(), CertReloadFails: t.CertReloadFails.Load(),
	}
}

func (t *transportCounters) snapshot() TransportStats {
	return TransportStats{
		SendfileResponses: t.SendfileResponses.Load(), SendfileBytes: t.SendfileBytes.Load(),
		KTLSResponses: t.KTLSResponses.Load(), KTLSBytes: t.KTLSBytes.Load(),
		InlineResponses: t.InlineResponses.Load(), InlineBytes: t.InlineBytes.Load(),
		CopyResponses: t.CopyResponses.Load(), CopyBytes: t.CopyBytes.Load(),
		SendfileFallbacks: t.SendfileFallbacks.Load(), Truncated: t.Truncated.Load(), Aborted: t.Aborted.Load(),
	}
}

func (c *coldCounters) snapshot() ColdStats {
	s := ColdStats{
		Waited: c.Waited.Load(), Refused: c.Refused.Load(), Aborted: c.Aborted.Load(),
		ProbeErrs: c.ProbeErrs.Load(), LoadErrs: c.LoadErrs.Load(), LoadBytes: c.LoadBytes.Load(),
		StillCold: c.StillCold.Load(), WaitNanos: c.WaitNanos.Load(), WaitCount: c.WaitCount.Load(),
	}
	loadAll(s.Checked[:], c.Checked[:])
	loadAll(s.Resident[:], c.Resident[:])
	return s
}

func (r *raCounters) snapshot() ReadAheadStats {
	s := ReadAheadStats{
		Dropped: r.Dropped.Load(), Missing: r.Missing.Load(), Resident: r.Resident.Load(),
		Issued: r.Issued.Load(), Bytes: r.Bytes.Load(), Hit: r.Hit.Load(), Wasted: r.Wasted.Load(),
		Unused: r.Unused.Load(), Indexed: r.Indexed.Load(), IndexErrs: r.IndexErrs.Load(),
	}
	loadAll(s.Predicted[:], r.Predicted[:])
	loadAll(s.Refused[:], r.Refused[:])
	return s
}

func (c *cmcdCounters) snapshot() CMCDStats {
	s := CMCDStats{Starvation: c.Starvation.Load(), Malformed: c.Malformed.Load()}
	for ot := range c.Requests {
		loadAll(s.Requests[ot][:], c.Requests[ot][:])
	}
	return s
}
