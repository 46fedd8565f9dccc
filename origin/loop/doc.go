// Package loop is an event-loop engine for plain-TCP HTTP/1.1: a few
// goroutines, each in epoll_wait on its own epoll instance, serve every
// connection, so a connection costs a small struct instead of a
// goroutine, its stack and its buffers.
//
// # What it owns
//
//   - The loops: one per Config.Loops, each a goroutine with its own
//     epoll instance and eventfd. With nothing to do it parks on Go's
//     netpoller through a second epoll instance that holds the first,
//     so an idle server costs no CPU; where events come less than a
//     millisecond apart it waits in epoll_wait as a raw system call
//     instead, under 10 ms at a time and yielding between waits, so the
//     runtime neither takes its thread's P away nor wakes and parks
//     threads for it. The system calls of a wake-up are raw too, and so
//     are a connection's accept, set-up and close (rawsock.go), so
//     that sysmon sleeps while the loops are parked (wait.go). Every loop watches
//     the one listening socket with EPOLLEXCLUSIVE, so the kernel wakes
//     one loop per pending connection and accepts spread over the loops.
//   - The poller (Config.Poller), how a loop learns what is ready, behind
//     one seam (poller.go): epoll, or io_uring (uring.go, on a ring of
//     the loop's own, ring.go), where one io_uring_enter a loop
//     iteration submits every change of what is watched (one-shot poll
//     requests) and reaps every readiness, the loop's goroutine locked
//     to its thread (SINGLE_ISSUER, DEFER_TASKRUN). On io_uring a
//     connection waiting for a request is not polled but received from,
//     into one of the ring's provided buffers (recvbufs.go), so the
//     loop's reads cost no system call and an idle connection still
//     holds no buffer; an idle io_uring loop parks in io_uring_enter
//     itself, an ordinary system call, not on the netpoller (the ring
//     wakes its submitter at once; an eventfd registered with it, late); a response's
//     memory parts (its header, a
//     playlist) are sent by a sendmsg queued in the ring with
//     MSG_DONTWAIT, submitted with the iteration's wait, and the
//     response goes on from its completion; file spans leave by
//     sendfile(2) on both.
//     PollerAuto takes io_uring where the kernel allows it and epoll
//     where it refuses (a container's seccomp profile,
//     kernel.io_uring_disabled), said once in the log.
//   - Connections (Conn): the descriptor, a read buffer taken from the
//     loop's pool only while a request is incomplete or being answered
//     and given back when the connection goes idle, the response in
//     flight, and the connection's place in one of the timeout lists.
//   - Timeouts: a connection waits for a request's bytes (ReadTimeout,
//     from its first byte or from accept), for the next request
//     (IdleTimeout), or for the peer to take a response (WriteTimeout,
//     from the response's start). Each list holds connections in the
//     order their wait began, so expiry looks only at list heads.
//   - Pacing: a response with a rate (wire.Response.Rate, -limit-rate)
//     that has sent its allowance waits in the paced list, reading and
//     sending nothing, for wire.PaceQuantum; its expiry sends the next
//     quantum's worth, under the write timeout again. The loop's timers
//     pace it: no thread sleeps.
//   - Closing: a connection closed after its last response, while its
//     client may still be sending (the Handler said so, or bytes wait
//     unread), lingers: its write side is shut and what arrives is read
//     and dropped until the client closes or 5 s pass, so a reset cannot
//     destroy the response before the client reads it.
//   - Writing: a Response is memory parts and file spans. Consecutive
//     memory parts leave in one sendmsg (writev), with MSG_MORE when a
//     file span follows so the header shares its first segment; a span
//     leaves with sendfile(2) from an explicit offset. A short send means
//     the socket buffer is full: the connection waits for EPOLLOUT and
//     sends once per writable event, never retrying a send that is sure
//     to return EAGAIN.
//   - Adopted sockets (adopt.go): a connection set up elsewhere (an
//     HTTPS one after its handshake) with a ConnIO that reads it (the
//     kernel opening TLS records, or crypto/tls). A ConnIO that is a
//     Sealer (TLS in user space) is handed the response's plaintext
//     instead of the socket: memory parts as they are, file spans read
//     with pread into the loop's buffer from pages the Ready hook found
//     resident; what it could not send yet waits for EPOLLOUT, and what
//     it read from the socket but did not return is read again before
//     the loop next waits (Buffered), since no readiness will announce
//     it.
//
// # What it never does
//
// It knows nothing of HTTP: the Handler parses requests and builds
// responses. It never blocks a loop thread on storage: before each
// sendfile window it asks the response's Ready hook, which may answer
// "not yet" and Resume the connection from another goroutine once the
// pages are in memory; once a response's parts are sent it asks its More
// hook (a body whose length is not known yet) for the next, which may
// answer "not yet" the same way. It never reads a connection while a response is
// in flight (pipelined requests wait in the buffer, answered in order).
//
// # Ownership
//
// A Conn and its buffers belong to its loop's thread; the Handler's
// methods run there. Other goroutines reach a connection only through
// Post and Resume, which queue work for its loop and wake it through the
// eventfd. Every loop goroutine is started by Serve and has ended when
// Serve returns.
package loop
