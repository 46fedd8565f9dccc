// Package verify checks response bodies and Content-Range headers against
// the content a server should have sent, so that a load test counts a wrong
// byte as an error instead of as throughput.
//
// # What it owns
//
// The expected content of a file, behind one small interface (Content):
// the deterministic bytes of package segorigin/fixtures/synth (Synth), the
// text of a synth playlist (Playlist), or a file on local disk (File). A
// Writer checks a body as it streams, so a 256 MiB body needs no buffer; Body
// checks one that is already in memory. ContentRange checks a 206's header
// against the span that was asked for.
//
// # Rules it keeps
//
// A body is named by the base name of its URL path (synth content depends on
// the base name only: fixtures/README.md). Every mismatch is reported as a
// *Mismatch carrying the name and the file offset of the first wrong byte, so
// an operator can fetch that span again by hand. A body shorter or longer than
// expected is an error too: a Writer that is Closed before its expected end,
// or written past it, says so.
//
// # What it never does
//
// No network I/O, no global state; every function is safe for concurrent use
// (a Writer is not: one per body).
package verify
