// Package load runs verified player-like load against an HTTP origin: N
// sessions, each with its own keep-alive connection, walk a title (a synth
// workload's files or byte ranges in order, or an HLS playlist's segments)
// at a chosen rate or as fast as they can, for a bounded time or number of
// requests, while optional idle keep-alive connections sit beside them
// (workload W5, ARCHITECTURE.md). A session may read its bodies at a capped
// bit rate and pause between them, like a player on a slow link with a
// full buffer; each request's time to the response's headers (TTFB) and to
// the body's last byte go into two histograms.
//
// Every body is checked byte for byte as it streams in (package
// segorigin/loadtest/verify): against synth content, against the same file
// on local disk, or, for media that is neither, by length and Content-Range
// only. A wrong status, a wrong Content-Length or Content-Range, a short
// body or a wrong byte is an error, kept with the URL and the file offset.
//
// # Goroutines
//
// Run owns every goroutine it starts and returns only after all have
// ended: one per session (ends at the deadline, at the request limit, or
// when the caller's context ends), one printing progress (ends with the
// run), and one per idle connection (ends when Run closes the connection).
//
// # What it never does
//
// It follows no redirects, asks for no compression, and keeps no global
// state: two Runs may share a process.
package load
