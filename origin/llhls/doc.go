// Package llhls reads what a Low-Latency HLS media playlist says about
// itself and decides the Delivery Directives of a request for it
// (draft-pantos-hls-rfc8216bis §6.2.5): pure functions over bytes, no I/O,
// no clock, no state. Fuzzed.
//
// # What it owns
//
//   - [Parse]: the tags a server needs to answer a Delivery Directive:
//     EXT-X-SERVER-CONTROL's CAN-BLOCK-RELOAD, CAN-SKIP-UNTIL and
//     CAN-SKIP-DATERANGES, EXT-X-TARGETDURATION, EXT-X-PART-INF's
//     PART-TARGET, EXT-X-MEDIA-SEQUENCE, EXT-X-ENDLIST, the Media Sequence
//     Number of the last whole segment and how many Partial Segments the
//     playlist lists of it and of the segment after it, the URI of that
//     last segment and of the part an EXT-X-PRELOAD-HINT names.
//   - [ParseQuery]: `_HLS_msn`, `_HLS_part` and `_HLS_skip` from a
//     request's query (§6.2.5.2: `_HLS_part` without `_HLS_msn` is an
//     error, [ErrPartWithoutMSN]).
//   - [Playlist.Decide]: a Blocking Playlist Reload (§6.2.5.2) is answered
//     now (satisfied, or the playlist cannot block), waits, or is refused
//     (more than two segments, or the Advance Part Limit, beyond the last).
//   - [Playlist.Delta]: the Playlist Delta Update (§6.2.5.1, §4.4.5.2):
//     the segments further from the end of the last segment than the Skip
//     Boundary, and their tags, replaced by one EXT-X-SKIP.
//
// # What it never does
//
//   - It never reads a file, waits, or keeps a previous version of a
//     playlist: the RECENTLY-REMOVED-DATERANGES of a v2 delta update is
//     always empty, as nothing remembers which date ranges an earlier
//     version listed.
//   - It validates no more of a playlist than it reads: a playlist it
//     cannot read ([ErrNotMediaPlaylist]) is one whose directives the
//     caller ignores.
package llhls
