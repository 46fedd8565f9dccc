// Package percent decodes percent-encoded bytes (RFC 3986 §2.1) into a
// caller's buffer without allocating. It is the one decoder of segorigin:
// request paths (origin) and token values (origin/token) both use it.
//
// It owns the grammar only: a '%' must be followed by two hex digits of
// either case. It never decides what a decoded byte may be (a path refuses
// control characters; a token's IP field does not care); callers check
// that on the result. No I/O.
//
// It is written by hand rather than with net/url's unescapers because
// those return a new string per call and accept a different grammar per
// mode; the hot path decodes every request path into a pooled buffer.
package percent
