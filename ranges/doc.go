// Package ranges turns an HTTP Range header value into byte spans of a
// representation of known size, and frames several spans as a
// multipart/byteranges body, following RFC 9110 §14.
//
// # What it owns
//
//   - Parsing a Range field value against a size: [Parse] and [ParseInto]
//     return the satisfiable spans, coalesced and capped, or one of three
//     sentinel errors checked with errors.Is: [ErrInvalid] (ignore Range,
//     answer 200), [ErrUnsatisfiable] (answer 416 with
//     [UnsatisfiedContentRange]), [ErrTooMany] (ignore Range, answer 200).
//   - The off-by-one of Content-Range, in one place: [Span.ContentRange].
//   - The multipart/byteranges framing: part headers, boundary and the exact
//     body length for Content-Length, computed before a byte is written
//     ([Multipart]).
//
// # What it never does
//
// No I/O, no HTTP types, no clock, no package-level mutable state. It does
// not decide whether Range applies at all (method, If-Range, status): the
// caller does that first. It never reads the representation; it only says
// which bytes to send and what to write around them. A caller answering a
// single span must not use multipart: "A server MUST NOT generate a
// multipart response to a request for a single range, since a client that
// does not request multiple parts might not support multipart responses"
// (RFC 9110 §15.3.7.2).
//
// # The RFC 9110 rules it keeps
//
// Grammar (§14.1.1 with verified erratum 7306, §14.1.2, list rule §5.6.1):
//
//	ranges-specifier = range-unit "=" OWS range-set
//	range-set        = 1#range-spec
//	int-range        = first-pos "-" [ last-pos ]
//	suffix-range     = "-" suffix-length
//
// Parse reads it so:
//
//   - The unit is compared case-insensitively ("All range unit names are
//     case-insensitive", §14.1); only "bytes" is understood, and "An origin
//     server MUST ignore a Range header field that contains a range unit it
//     does not understand" (§14.2), hence ErrInvalid.
//   - No whitespace before "=". Optional whitespace (SP, HTAB) after "="
//     (erratum 7306 restores it; §14.1.2's own example is "bytes= 0-999,
//     4500-5499, -1000"), around commas and at both ends of the value is
//     skipped; none inside a range-spec. Empty list elements are ignored
//     ("a recipient MUST
//     parse and ignore a reasonable number of empty list elements", §5.6.1.2),
//     but at least one range-spec must be present: "bytes=" and "bytes=,"
//     are invalid.
//   - Positions are 1*DIGIT: no sign, no inner space, no hex. "An int-range
//     is invalid if the last-pos value is present and less than the
//     first-pos", and "A ranges-specifier is invalid if it contains any
//     range-spec that is invalid or undefined for the indicated range-unit"
//     (§14.1.1): one bad element makes the whole value ErrInvalid.
//   - "recipients MUST anticipate potentially large decimal numerals and
//     prevent parsing errors due to integer conversion overflows" (§14.1.2):
//     numerals saturate at math.MaxInt64 instead of failing, so a huge
//     first-pos is unsatisfiable, a huge last-pos clamps to the end, a huge
//     suffix-length means the whole representation. The last-pos < first-pos
//     test stays exact for numerals of any length.
//   - Satisfiable (§14.1.2): "an int-range with a first-pos that is less than
//     the current length of the selected representation or a suffix-range
//     with a non-zero suffix-length". Unsatisfiable specs are dropped; if
//     none is left, ErrUnsatisfiable.
//   - "When a selected representation has zero length, the only satisfiable
//     form of range-spec is a suffix-range with a non-zero suffix-length"
//     (§14.1.2). Such a range is satisfiable, so 416 would be wrong, yet no
//     206 can express zero bytes (Content-Range needs first <= last). Parse
//     reports ErrInvalid for it, so the caller ignores Range and answers 200
//     with the empty body: "A server that supports range requests MAY
//     ignore a Range header field when the selected representation has no
//     content" (§14.2).
//     Every other range-spec on a zero-length representation is
//     unsatisfiable (416).
//
// Coalescing: "a server MAY coalesce any of the ranges that overlap, or that
// are separated by a gap that is smaller than the overhead of sending
// multiple parts, regardless of the order in which the corresponding
// range-spec appeared" (§15.3.7.2). Parse always merges spans that overlap or
// touch (gap 0), so the bytes sent never exceed the size of the
// representation, however the header repeats itself. Order: "the server
// SHOULD send the parts in the same order that the corresponding range-spec
// appeared in the received Range header field, excluding those ranges that
// were deemed unsatisfiable or that were coalesced into other ranges"
// (§15.3.7.2): each merged span takes the place of its earliest member.
//
// # Our limits
//
// "A server that supports range requests MAY ignore or reject a Range header
// field that contains an invalid ranges-specifier, a ranges-specifier with
// more than two overlapping ranges, or a set of many small ranges that are
// not listed in ascending order, since these are indications of either a
// broken client or a deliberate denial-of-service attack" (§14.2). We
// coalesce instead of refusing overlap, and bound the work:
//
//   - max is the cap on spans after coalescing (max <= 0 means
//     [DefaultMaxRanges], 64); more gives ErrTooMany.
//   - Parse stores at most 8*max spans for one header (512 by default);
//     one more is refused with ErrTooMany at once, before the rest is read
//     and before anything is sorted. Parse therefore sorts at most 8*max
//     spans.
//   - Only stored spans count toward that limit. A satisfiable spec that
//     overlaps or touches the span stored just before it is merged into
//     that span on the spot and stored nowhere, so repeated or chained
//     specs ("bytes=0-0,0-0,...", "bytes=0-,5-6,5-7,...", CVE-2011-3192)
//     cost nothing and never count: 2000 copies of 0-0 give one span of
//     one byte. Unsatisfiable and empty specs are not stored and do not
//     count either. The loop over the specs is bounded by the length of
//     the header, which the server bounds. The final coalescing gives the
//     same result with or without the early merges.
//   - Parse does not merge spans separated by a gap, even a small one: the
//     client gets the bytes it asked for and no others.
//
// The hot path, one range into a buffer with room, allocates nothing:
// ParseInto(buf[:0], "bytes=0-1", size, 0).
package ranges
