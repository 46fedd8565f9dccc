// Package coding decides whether a request's Accept-Encoding field lets a
// response carry the gzip content coding (RFC 9110 §12.5.3).
//
// # What it owns
//
//   - The grammar of Accept-Encoding: a comma-separated list of codings,
//     each with an optional weight ";q=" (RFC 9110 §12.4.2: "0" to "1"
//     with at most three decimals), codings compared without regard to
//     case, "x-gzip" equal to "gzip" (§8.4.1.3), "*" standing for any
//     coding the list does not name.
//   - The choice: gzip when its weight is above zero and the list does not
//     prefer identity to it by a higher weight.
//
// # Rules it keeps
//
// A request without the field gets identity: RFC 9110 §12.5.3 makes any
// coding acceptable then, but a client that says nothing (a health check,
// an old proxy, curl without --compressed) is best served bytes it can use
// as they are, as nginx and every CDN do. An element whose weight does not
// parse is ignored, never read as an acceptance. Several field lines are
// one list (RFC 9110 §5.3).
//
// # What it never does
//
// I/O, HTTP types, choosing among other codings than gzip and identity.
package coding
