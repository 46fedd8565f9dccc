// Package clientaddr decides which address a request comes from when
// proxies stand between the viewer and the origin.
//
// # What it owns
//
//   - The trusted-proxy list ([Trusted]): CIDR prefixes whose peers may
//     speak for someone else.
//   - Reading X-Forwarded-For and Forwarded (RFC 7239) right to left to
//     the first hop that is not a trusted proxy ([Trusted.FromXFF],
//     [Trusted.FromForwarded]).
//   - Parsing a PROXY protocol v1 or v2 header from bytes ([ParseProxy]).
//
// # What it never does
//
//   - No I/O, no clock, no HTTP types, no goroutines, no package-level
//     mutable state: the origin reads the bytes and the header values and
//     passes them in.
//   - It never believes a header or PROXY line from a peer outside the
//     trusted list: a peer's own address is the answer then.
//
// # The rules it keeps
//
//  1. Right to left. Each proxy appends the address it received the
//     request from, so the rightmost entries were written by the proxies
//     nearest to us; everything left of the first untrusted hop was written
//     by that hop or its client and may be forged.
//  2. A malformed entry, "unknown" or an obfuscated node (RFC 7239 §6.2,
//     §6.3) ends the walk: the answer is the last trusted hop, which is the
//     best address anyone vouches for.
//  3. A PROXY header must come whole at the start of the connection, before
//     any other byte; [ParseProxy] says when more bytes are needed and never
//     reads past the header, so the caller can consume exactly its length.
package clientaddr
