// Package cmcd parses Common Media Client Data (CTA-5004, "CMCD"): the
// key-value pairs a player attaches to each request, in the CMCD query
// parameter or in the CMCD-Object, CMCD-Request, CMCD-Session and
// CMCD-Status headers.
//
// # What it owns
//
//   - The payload grammar (CTA-5004 §3.2): a comma-separated list of
//     key[=value], where a Boolean true is the bare key, strings are
//     double-quoted with \" and \\ escapes, and tokens and numbers are bare.
//   - The reserved keys and their types: Integer br bl d dl mtp rtp tb v
//     (non-negative, at most 15 digits), Decimal pr, Boolean bs su, Token
//     ot sf st (from the enumerations of §3.3, anything else is malformed),
//     String cid sid (at most 64 characters, §3.3), nor (at most
//     MaxStringLen) and nrr (a byte range "first-last", either end
//     optional).
//   - The player's read-ahead hint, [Data.Next]: nor (percent-decoded) and
//     nrr, for a caller that wants to warm what the player asks for next.
//
// # Rules it keeps
//
// Parsing never fails a request: [Data.Add] keeps every well-formed key
// and returns an error (errors.Is [ErrMalformed]) naming the first entry it
// dropped, so the caller can count it. Unknown keys, the custom keys of
// §3.4 ("com.example-key") included, are skipped without error. A key
// given twice keeps the last value, as in an RFC 8941 dictionary. Keys are
// accepted in any of the four headers: players disagree on the
// assignment, and the meaning of a key does not depend on where it came.
//
// # What it never does
//
// No I/O, no HTTP types, no clock, no package-level mutable state. It does
// not decide what a request is served: CMCD is information about the
// player, and the origin's answer never depends on it.
package cmcd
