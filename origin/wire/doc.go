// Package wire is what the HTTP/1 layer hands a transport: one response as
// memory parts and file spans, in order, and what the transport reports
// back about how it went. Every transport (the event loops, the stream
// transport of a goroutine per connection) sends the same Response.
//
// It owns the types only, and the arithmetic of pacing a response
// (Allowance): no I/O, no HTTP, no sockets, no clock reads.
package wire
