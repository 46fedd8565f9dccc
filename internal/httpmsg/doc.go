// Package httpmsg holds checks on the raw bytes of an HTTP/1.1 message
// that a server engine's own parser does not make: fasthttp, for one,
// joins folded header lines instead of refusing them. Each check is a pure
// function over bytes, so that any engine in front of the origin's handler
// calls the same one.
//
// It owns no I/O and no HTTP types, and decides nothing about a status:
// the caller maps a failed check to its answer.
package httpmsg
