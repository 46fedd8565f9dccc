// Package origin is segorigin's HTTP/1.1 front end: the fasthttp server and
// its handler, authorization carriers, response headers, errors, and the
// body stream with the choice of its writer. It is the only package that
// knows fasthttp. The connections under it (listener limits, *conn.TCP's
// MSG_MORE header, sendfile and copy, HTTPS, certificates, the kTLS
// hand-over) are origin/conn's; the admin endpoints are origin/admin's.
//
// # Engines
//
// The handler makes a plan of each request (handler.go, steps.go): status
// and fields in fasthttp's Response, a file body as handle, spans and
// multipart framing. On Linux one HTTP/1 layer (h1_linux.go) drives every
// connection: it parses requests with fasthttp's RequestHeader, makes the
// plan, and hands it to a transport as a wire.Response. Two transports
// move its bytes: the event loops of origin/loop (plain HTTP, the
// default; engine_loop_linux.go) and a goroutine per connection of
// origin/stream (HTTPS, and -engine fasthttp; engine_stream_linux.go).
// The file steps (fileSteps in steps.go) run on the loop with noBlock
// (cache hits only, a resident first window); a step that would block
// suspends, and the request resumes at that step on a goroutine. Other
// systems serve with fasthttp's server (engine_other.go), through the
// body stream below.
//
// # Parts
//
// Server is the public surface and lifecycle only: New wires the parts,
// Run starts and drains them. The request path is handler's (handler.go):
// it resolves a request, asks admission (access rules, tokens, the client
// address, the per-client limit) and runs the file steps on files
// (steps.go; the live ones on liveSteps, live.go); each subsystem they
// consult (responder, recorder, publisher, contentTags, coldPath,
// readAhead, liveWaits, gzipPolicy, mediaRoot) owns its state and takes
// only what it needs, never *Server.
//
// # Request path
//
//	accept (origin/loop on plain HTTP; origin/conn's Gate and, on HTTPS,
//	  conn.TLS, then origin/stream): connection limits, the PROXY header
//	→ the HTTP/1 layer (h1_linux.go) parses with fasthttp's RequestHeader
//	  and refuses what RFC 9112 refuses (bare LF or CR, obs-fold, the
//	  HTTP/2 preface, 414, 431, 505, bad Transfer-Encoding or Host); reads
//	  past a body up to 64 KiB (413 above), 100 Continue once
//	→ resolve (handler.go): pins the policy in force (policy.go: the
//	  settings a reload changes, one snapshot for the whole request), the
//	  message checks, -access, the method (GET,
//	  HEAD; OPTIONS for CORS; another RFC 9110 method 405 + Allow; an
//	  unknown one 501), cleanPath (percent-decode, refuse NUL/CTL, remove
//	  dot segments, refuse climbing above the root: 400), authorization
//	  (strip /t/<token>/, a token from path, query, cookie or Bearer, or an
//	  nginx secure_link: 401/403/410)
//	→ the file steps (steps.go), each of which may go on, answer, or
//	  suspend where it would block an event loop:
//	  open (cache.Acquire: fd + size + mtime + ETag, open+fstat only on a
//	  miss; os.Root keeps symlinks inside the root) → validators (-etag
//	  content: the entry's, else the file's extended attribute) → publish
//	  (a file still being written: 503 + Retry-After + no-store, or its
//	  bytes with no-store) → content tag (hashed on a cold reader, up to
//	  -cold-deadline) → rewrite (a playlist authorised by a query token,
//	  with the token in each URI of its scope) → conditions (RFC 9110
//	  §13.2.2: 412, 304) → range (GET only, If-Range: 206, multipart 206,
//	  416) → cold (the first window of the body made resident, or 503) →
//	  respond (Content-Type, Cache-Control by kind, ETag, Last-Modified
//	  never after Date, Accept-Ranges, CORS)
//	→ render (h1_linux.go): Connection and keep-alive, -max-requests-per-
//	  conn, the drain; the header by fasthttp's ResponseHeader, the body as
//	  wire.Parts (memory, or spans of the cached fd)
//	→ the transport sends the parts: sendmsg of header and inline body, or
//	  the header with MSG_MORE then sendfile per span (plain TCP and kTLS),
//	  or pread and write (userspace TLS, -disable-sendfile); later windows
//	  of a long body are made resident first (readyWindow).
//
// # Body paths
//
// Every body is counted at one point (countBody, from the HTTP/1 layer's
// done): inline (the cache's memory, one sendmsg with the header),
// sendfile (plain TCP), ktls (sendfile on a socket the kernel seals), or
// copy. A file system that refuses sendfile (EINVAL, ENOSYS) falls back to
// copy for that response (SendfileFallbacks). The bytes sent always equal
// the Content-Length announced; when they cannot (the file shrank, the
// client left, the write timed out) the connection closes, so keep-alive
// never desynchronises.
//
// HTTPS (origin/conn: tls.go, tlsconn.go, ktls_linux.go; the pure parts
// in origin/ktls; here tls.go only marks listeners and reloads):
// crypto/tls does the handshake (TLS 1.2+, ECDHE AEAD suites, ALPN
// http/1.1). With kTLS (probed once at start; per connection after the
// handshake) the keys of both directions go to the kernel (key and IV
// derived from the secrets a per-connection KeyLogWriter collects, the
// sequence numbers at hand-over counted), and the connection's responses
// are plaintext on the socket, sent as on plain TCP; close_notify leaves
// as an alert record; requests are read as plaintext where the kernel
// opens records, through crypto/tls where it does not. A refused
// setsockopt (ENOENT: no kTLS in the kernel) leaves the connection on
// userspace TLS, counted in Stats.TLS.
//
// Other systems serve with fasthttp's Server (engine_other.go), whose
// handler (handle, route) renders the same plan into a body stream
// (transport.go): the copy path.
//
// # File descriptor ownership
//
// The steps acquire a *cache.Handle by the request's name, a reqName over
// the request's reused path buffer: not a string, so keeping it takes a
// visible copy (String), and one kept past its request panics on use
// rather than read another request's path; past the lookup the steps use
// the handle's own copy (Handle.Name). A step that answers leaves the
// handle to advance, which releases it; a final plan with a body hands it
// to the HTTP/1 layer, which releases it when the body is done or the
// connection closes. The cache closes the fd only when it has dropped the
// entry and the last response using it has released it, so no fd closes
// under an in-flight sendfile.
//
// # Logs
//
// Every response is timed (segorigin_response_seconds) and, with an access
// log configured, written as one combined or JSON line (accesslog.go; the
// formats in origin/accesslog): every field a client chooses (method,
// path, query, proto, Referer, User-Agent, Host, Range, CMCD strings)
// passes through the token Redactor of the authorization in force, and the
// CMCD the player sent (origin/cmcd) is parsed into the line. CMCD is also
// counted by object type and streaming format when the request is read;
// it is information about the player and never changes an answer.
// Refusals (bad paths, unparseable requests, auth failures by reason,
// EMFILE, connection limits) and fasthttp's own messages are always
// counted and logged at most once per interval per kind (rateLimitedLog),
// the next line saying how many were held back; text that comes from a
// request is redacted and cut before it is logged.
//
// # Counters and metrics
//
// Each subsystem declares its counters once, as a struct generic over the
// counter type (TransportCounters[C], ColdCounters[C], conn's
// ListenerCounters[C], loop's Counters[C], ...), gathered in Counters[C].
// The server increments Counters[atomic.Int64]; Server.Stats returns
// Counters[int64] (Stats), copied by one reflective walk over the two
// (snapshot.go), so a new field is in the snapshot with no line there.
// Beside its counters each subsystem has a metric table function
// (transportMetrics, coldMetrics, ...: metrics.go collects them) that
// declares its metrics: name, help, labels, counter or gauge, and the
// snapshot field each series reads. Server.Metrics builds the table from
// one snapshot at each scrape; origin/admin turns it into Prometheus
// descriptors and samples and names no metric itself. A subsystem that is
// off declares its metrics and exports no series (table.off).
//
// A new counter is: a field in its subsystem's counter struct, a line in
// its metric table function, the increment where the event happens, and
// a row in docs/operations.md (TestMetricsDeclared checks that every
// declared metric is exported and documented, and that nothing else is
// exported). The latency histogram (Server.Latency) is the one metric
// outside the tables: a Prometheus collector of its own.
//
// # What it never does
//
// It never lets a loop thread wait on storage, never lists directories,
// never compresses media or a Range request (media is compressed
// already and Range must address the stored bytes: only text kinds are
// gzipped, gzip.go, once per version of a file), never hijacks a
// connection, never lets an error's text reach a client, and never uses
// fasthttp's MaxConnsPerIP (its connection wrapper would hide the TCP
// connection and lose sendfile); origin/conn's gate enforces the
// connection limit, admission the per-client one. It never sets a socket option or calls sendmsg or sendfile: conn
// does.
package origin
