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
// # Request path
//
//	accept (origin/conn: Gate → *conn.TCP, connection limits; HTTPS:
//	  conn.TLS wraps it)
//	→ fasthttp parses the request
//	→ handle: HTTP major version other than 1 (505); a field name with a
//	  space (400); method (GET, HEAD; OPTIONS for CORS; another RFC 9110
//	  method 405 + Allow; an unknown one 501)
//	→ cleanPath: percent-decode, refuse NUL/CTL, remove dot segments,
//	  refuse climbing above the root (400)
//	→ auth: strip /t/<token>/, verify a token from path, query, cookie or
//	  Bearer (401/403)
//	→ cache.Acquire: fd + size + mtime + ETag (open+fstat only on a miss;
//	  os.Root keeps symlinks inside the root; a file whose real path has a
//	  hidden segment is 404 like its name would be)
//	→ -etag content: the entry's content validator, else the file's
//	  extended attribute (one fgetxattr, off the loop)
//	→ checkInProgress: a file still being written (origin/publish) is
//	  503 + Retry-After + no-store, or with -in-progress uncached its
//	  bytes with no-store; its entry is dropped
//	→ -etag content, not known yet: hashed on a cold reader, waited for up
//	  to -cold-deadline (then 503 + Retry-After)
//	→ a playlist or manifest authorised by a query token: rewritten by
//	  origin/rewrite so each URI in the token's scope carries it, an
//	  in-memory body with its own ETag (queryrewrite.go; a file the cache
//	  did not inline is read off the event loop)
//	→ evaluatePreconditions: RFC 9110 §13.2.2 order (412, 304)
//	→ ranges.ParseInto (GET only, and only if If-Range holds) → 200, 206,
//	  multipart 206 or 416
//	→ headers: Content-Type from the built-in media table, Cache-Control by
//	  kind, ETag, Last-Modified (never after the Date fasthttp sends:
//	  date.go), Accept-Ranges, CORS
//	→ bodyStream: fasthttp flushes the header (ImmediateHeaderFlush) with
//	  MSG_MORE, then calls WriteTo, which sends the span(s) itself.
//
// # Body paths
//
// A body is sent by exactly one of three writers (transport.go), chosen
// per response by the file (inlined or not) and the connection's type
// (*conn.TCP, or conn.KernelTLS for an HTTPS socket the kernel seals),
// never by hoping types line up inside fasthttp:
//
//   - inline (a file the cache holds in memory, Handle.Bytes): on plain TCP
//     and kTLS the body is the connection's tail: the socket's next Write,
//     fasthttp's header flush, sends header and body with one writev
//     (conn.TCP.SetTail; the socket makes sure it is that flush). On
//     userspace TLS WriteTo puts the body into fasthttp's buffer behind the
//     header. Multipart bodies of such a file are assembled in memory.
//   - sendfileWriter (plain TCP or kTLS, Linux): the header leaves with
//     MSG_MORE (conn.TCP.CorkHeader), each span with sendfile(2)
//     (conn.TCP.Sendfile) from the cached fd at an explicit offset (the
//     fd's shared offset is never used), multipart framing with MSG_MORE.
//     EAGAIN waits on Go's netpoller through syscall.RawConn, which also
//     enforces the write deadline fasthttp set. A file system that
//     refuses sendfile (EINVAL, ENOSYS) falls back to copy for that
//     response, counted in SendfileFallbacks.
//   - copyWriter (TLS without kTLS, or -disable-sendfile): conn.CopySpan,
//     pread into a pooled buffer and write; on TLS one record (16 KiB)
//     per write.
//
// HTTPS (origin/conn: tls.go, tlsconn.go, ktls_linux.go; the pure parts
// in origin/ktls; here tls.go only marks listeners and reloads):
// crypto/tls does the handshake (TLS 1.2+, ECDHE AEAD suites, ALPN
// http/1.1) and always reads the requests. Without kTLS it also writes the
// responses, and copyWriter serves the bodies, its header record corked
// with MSG_MORE. With kTLS (probed once at start; per connection after the
// handshake) the transmit keys go to the kernel: key and IV derived from
// the secrets a per-connection KeyLogWriter collects (TLS 1.3:
// HKDF-Expand-Label; TLS 1.2: the PRF key block, with the server random
// read off the wire), the sequence number at hand-over counted (session
// tickets are off on such connections), then setsockopt TCP_ULP "tls" and
// TLS_TX. From then on the connection writes plaintext to the socket, so
// sendfileWriter serves it as on plain TCP (counted as KTLS); close_notify
// leaves as an alert record (sendmsg with TLS_SET_RECORD_TYPE), and any
// later write by crypto/tls (a KeyUpdate answer, an alert) is refused and
// ends the connection rather than mix userspace ciphertext into the
// kernel's stream. A refused setsockopt (ENOENT: no kTLS in the kernel)
// leaves the connection on userspace TLS, counted in Stats.TLS.
//
// The bytes sent always equal the Content-Length announced. When they
// cannot (the file shrank, the client left, the write timed out) WriteTo
// returns an error and fasthttp closes the connection, so keep-alive never
// desynchronises. Stats.Transport counts responses and bytes per path.
//
// # File descriptor ownership
//
// The handler acquires a *cache.Handle by the request's name, a reqName
// over the request's reused path buffer: not a string, so keeping it takes
// a visible copy (String), and one kept past its request panics on use
// rather than read another request's path; past the lookup the handler
// uses the handle's own copy (Handle.Name). For GET with a body it hands
// the handle to a pooled bodyStream, whose Close (always called by fasthttp,
// for HEAD and on errors too) releases it; every other answer releases it
// in the handler. The cache closes the fd only when it has dropped the
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
// connection and lose sendfile); origin/conn's gate enforces connection
// limits. It never sets a socket option or calls sendmsg or sendfile: conn
// does.
package origin
