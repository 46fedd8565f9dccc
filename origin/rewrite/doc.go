// Package rewrite writes a request's credentials into the URIs an HLS
// playlist or a DASH manifest lists, so that a player whose token came in
// the query keeps sending it: a relative URI resolves against the
// playlist's URL without its query (RFC 3986 §5.2.2: the query of the
// result is the reference's own), so without a rewrite every segment
// request would arrive without the token.
//
// # What it owns
//
//   - HLS (RFC 8216): [HLS] rewrites every URI line (§4.1: a line that is
//     not blank and does not start with '#') and the URI attribute of
//     EXT-X-KEY, EXT-X-SESSION-KEY, EXT-X-MAP, EXT-X-MEDIA,
//     EXT-X-I-FRAME-STREAM-INF, EXT-X-SESSION-DATA, EXT-X-PART,
//     EXT-X-PRELOAD-HINT and EXT-X-RENDITION-REPORT.
//   - DASH (ISO/IEC 23009-1): [DASH] rewrites BaseURL text,
//     SegmentTemplate@media and @initialization, SegmentURL@media,
//     Initialization@sourceURL and RepresentationIndex@sourceURL, resolving
//     each against the BaseURL chain in force where it appears.
//   - What each URI stands for: [Kind]. A key (EXT-X-KEY,
//     EXT-X-SESSION-KEY) is one resource a player needs to decrypt; a
//     SegmentTemplate attribute is a pattern for many paths, which a
//     credential signed for one path cannot serve. Target.Param is told,
//     and chooses the credential.
//   - Which URI gets what: [Target]. A relative reference (path-absolute
//     or path-relative) is resolved against the document's URL; an
//     absolute or scheme-relative URI is ours only on HTTP or HTTPS at a
//     host listed in Target.Hosts. Never because it names the document
//     URL's host: that came from the request's Host, which the client
//     chose, and a playlist naming a host the client picks would then
//     hand it the token. One naming any other host, another scheme
//     (data:, skd:), holding bytes RFC 3986 does not allow that players
//     read leniently (controls, spaces, '\'), or a path for which
//     Target.Param says no is left exactly as it was, and so is one whose
//     query already holds one of Target.Names. Otherwise the parameters
//     are added to its query (after an existing query, before a fragment).
//
// # What it never does
//
//   - No I/O, no clock, no HTTP types, no knowledge of tokens: what to add
//     for a path is Target.Param's answer.
//   - It changes no byte but the parameters it inserts: line endings,
//     whitespace, comments, attribute quoting, entity spelling and the
//     order of everything stay as they were, so removing the inserted
//     parameters gives back the input. The fuzz targets check exactly that.
//   - It is bounded: one pass over the input, never looking back, state of
//     a few words (and, for DASH, one base URL per open element, at most
//     MaxDepth), output at most Target.MaxOut bytes or ErrTooLarge. The
//     input is taken as one slice rather than read in chunks: the output
//     has to be held whole anyway (its ETag and Content-Length go before
//     it), and the caller bounds the input (origin serves a document over
//     its size limit unrewritten).
//
// # Why DASH is scanned by hand
//
// encoding/xml cannot rewrite a manifest byte for byte: its Encoder
// re-spells what it re-serialises (namespace declarations and prefixes,
// attribute quoting and whitespace inside tags, entity and character
// references, self-closing elements), and its Decoder reports where a
// token ends but not where each attribute value lies, decoding the values
// as it goes. A CDN and a player should see the packager's manifest with
// the parameters added and nothing else, so [DASH] is a small scanner over
// the XML 1.0 productions a manifest uses (start and end tags with quoted
// attributes, text, comments, CDATA sections, processing instructions,
// the DOCTYPE), and the tests use encoding/xml as the oracle that the
// output is still the same document.
package rewrite
