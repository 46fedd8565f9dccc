// Package conn is segorigin's connection layer: everything between the
// listening socket and the bytes of a response, with no knowledge of HTTP,
// fasthttp or the file cache.
//
// # What it owns
//
//   - Gate and Listener (listener.go): the connection limit (open
//     connections per listener; a bound per client address counts
//     requests, in origin), closing what is over it at accept
//     before anything is spent on it, and the accept backoff: an accept
//     that fails for lack of descriptors (EMFILE, ENFILE) is counted,
//     reported through GateConfig.OnFDPressure (the owner of idle
//     descriptors gives some back), and retried after a backoff of 5 ms
//     doubling to 1 s, as net/http does.
//   - The PROXY protocol (proxy.go, proxy_linux.go; parsing in
//     origin/clientaddr), when GateConfig.Proxy is on: on a connection's
//     first Read, its first bytes are peeked (MSG_PEEK, waiting on the
//     netpoller under the read deadline while they are a valid start of a
//     header); a trusted proxy's header is consumed to exactly its length,
//     its source becomes RemoteAddr; a header from any
//     other peer, a malformed one, or none where one is required fails
//     every Read with an error wrapping net.ErrClosed (closed, counted,
//     logged rate-limited).
//   - TCP (tcp.go, tcp_linux.go): every accepted TCP connection, with its
//     RawConn kept, and the typed writes of the body paths: WriteMore
//     (MSG_MORE: more bytes follow at once, so a header shares a segment
//     with the first body bytes) and Sendfile (a span of a file at an explicit offset: the fd's shared offset is never
//     used; EAGAIN waits on Go's netpoller, which enforces the write
//     deadline; a file that ends first is ErrTruncated, a file system
//     that refuses sendfile ErrSendfileUnsupported). CopySpan (copy.go)
//     is the userspace path: pread into the caller's buffer and write, one
//     TLS record's worth per write on HTTPS.
//   - TLS (tls.go, tlsconn.go, certs.go, devcert.go): the HTTPS listener,
//     crypto/tls's configuration (TLS 1.2+, ECDHE AEAD suites, ALPN
//     http/1.1), the certificate in service and its reload (on a change of
//     the files, polled, and on Reload), the -tls-dev certificate.
//   - The kTLS hand-over (tlsconn.go, ktlsrx.go, ktls_linux.go; the pure
//     parts in origin/ktls): probed once at NewTLS (TLS_TX and TLS_RX per
//     cipher). The handshake reads one record per read, so crypto/tls
//     holds nothing past the client's Finished. Right after it, the keys
//     a per-connection KeyLogWriter collected are derived (sequence
//     numbers exact: TLS 1.3 session tickets are counted as crypto/tls
//     seals them) and given to the kernel with setsockopt TCP_ULP "tls",
//     TLS_TX, then TLS_RX. From then on plaintext goes to the socket
//     (KernelTLS returns it, so sendfile may serve), close_notify leaves
//     as an alert record, and any later write by crypto/tls is refused
//     (ErrWriteAfterOffload) and ends the connection. Where TLS_RX took,
//     requests are read as plaintext from the socket and the client's
//     control records are acted on (kernelRX): close_notify ends reading
//     cleanly, other alerts end it, a TLS 1.3 KeyUpdate gives the kernel
//     the next keys (Linux 6.14), or ends reading cleanly where it cannot
//     take them. A refused TCP_ULP or TLS_TX (ENOENT on a kernel without
//     kTLS) leaves the connection on userspace TLS; a refused TLS_RX
//     leaves requests read through crypto/tls; all counted.
//   - The hand-over to an event loop (HandOff, ktlsloop_linux.go,
//     userloop_linux.go): after the handshake, a connection the kernel
//     seals and opens (LoopConn), or one crypto/tls seals and opens
//     (UserLoopConn), leaves its goroutine: a duplicate of its socket
//     goes to the loop, its place in the gate with it (Adopted). A
//     UserLoopConn keeps its crypto/tls connection, over a recordConn
//     that then reads the socket without blocking (one read(2) per
//     readiness; nothing more is a temporary error, which crypto/tls
//     hands back without failing) and gathers the records crypto/tls
//     writes, for the loop to send.
//
// Each part counts into its own stats struct of atomics (ListenerStats,
// TLSStats), given at construction or its own, and logs to the
// *slog.Logger given at construction, rate-limited where a flood is
// possible.
//
// # The idle read
//
// Between keep-alive requests a connection pays one read(2) that returns
// EAGAIN before Go's netpoller parks it (fasthttp's serveConn calls
// br.Peek(1), which reads; poll.FD.Read tries read(2) first and waits on
// EAGAIN). It stays, because the only public way to wait first,
// syscall.RawConn.Read with a callback that declines its first call, is
// not safe: poll.FD.RawRead resets the poller's readiness
// (runtime_pollReset) before that first call, and epoll (edge-triggered)
// reports no new event for bytes already in the socket. A request that
// arrived while the server was still busy with the previous response,
// with the poller having seen it meanwhile, would then wait for the idle
// timeout. TestWaitBeforeReadLosesWakeup shows it (every attempt here
// loses the request) and fails the day Go keeps readiness across
// RawConn.Read. Under load the next request is usually in the socket
// already and the read finds it: the EAGAIN read is a below-saturation
// cost, about one syscall per request.
//
// # File descriptors and goroutines
//
// A TCP is owned by whoever Accept returned it to (the HTTP server); its
// Close gives its place in the limits back, once. conn never holds a file
// descriptor of a served file: Sendfile and CopySpan use the caller's for
// the call only. conn starts no goroutine; TLS.PollCertificates runs on
// the caller's until its context ends.
//
// # What it never does
//
// It never parses HTTP, never chooses a body path (the caller does, by the
// connection's type: *TCP or KernelTLS for sendfile, anything else for
// CopySpan), never opens a served file, never lets crypto/tls write into a
// socket the kernel seals, and never sends a byte past what it was asked.
package conn
