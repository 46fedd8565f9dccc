// Package predict says which object a player will ask for next, from what
// the media itself says: pure functions over bytes and names, no I/O, no
// clock, no state. Fuzzed.
//
// # What it owns
//
//   - HLS media playlists (RFC 8216): [ParseMedia] lists a playlist's
//     segments in order, with EXT-X-BYTERANGE spans resolved (§4.4.4.2: an
//     omitted offset starts where the previous range of the same URI
//     ended), URIs resolved against the playlist's directory; [Media.Next]
//     is the entry after a given one.
//   - DASH SegmentTemplate numbering: [NextNumber] turns a segment name
//     whose last run of digits is $Number$ (with or without %0Nd padding)
//     into the next number's name.
//   - ISO BMFF on-demand files: [ParseBoxHeader] reads one box header and
//     [ParseSidx] a SegmentIndexBox (ISO/IEC 14496-12 §8.16.3) into the
//     byte spans of its subsegments; [NextSpan] is the span after a range.
//   - CMCD (CTA-5004) nrr: [ParseNextRange] turns the next-range string
//     (the payload is parsed by package origin/cmcd) into a span, and
//     [Resolve] resolves nor against the object that carried it.
//
// # What it never does
//
//   - It never reads a file or a socket and never decides whether to read
//     ahead (origin does, within its byte and concurrency bounds).
//   - A name it returns is always a clean relative path (no leading "/",
//     no "." or ".." segment, no NUL) or nothing: a playlist, a CMCD key
//     or a crafted number cannot point outside the media root.
package predict
