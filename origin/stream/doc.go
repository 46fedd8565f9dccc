// Package stream is the blocking transport of the HTTP/1 layer.
//
// # What it owns
//
//   - A goroutine per connection (Server.Serve starts it, Shutdown waits for
//     it), reading into the connection's buffer under the read, idle and
//     write deadlines, and calling the Handler (the HTTP/1 layer) with what
//     arrived, exactly as the event loops do.
//   - The send of a wire.Response: memory parts in one write (over TLS, one
//     record), file spans by sendfile(2) on a plain or kernel-TLS socket
//     (the header with MSG_MORE), by pread and write otherwise; a file that
//     shrank ends the connection (wire.ErrTruncated), never a short body on
//     a kept connection.
//   - Park and Post (an answer made on another goroutine; ParkUntilGone
//     also watches the socket for the client's FIN or a reset, without
//     reading it, in one epoll instance and goroutine of the server's for
//     every parked connection, and closes the connection when the client
//     leaves; work posted after the connection's goroutine ended runs at
//     once, on the poster's), the Ready gate
//     before each window of a file span, the More hook after the last
//     part (a body whose length is not known yet), the lingering close after a
//     refusal (write side shut, then read and drop for up to 5 s), and the
//     drain.
//   - Pacing a response with a rate (wire.Response.Rate, -limit-rate): the
//     connection's goroutine waits a wire.PaceQuantum between file windows
//     once the allowance is spent, never a sleep per write.
//
// # What it never does
//
// It never parses HTTP, decides an answer, or opens a served file.
package stream
