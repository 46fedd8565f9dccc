package llhls

import (
	"bytes"
	"strconv"
)

// CanSkip reports whether p answers _HLS_skip with a delta update:
// §6.2.5.1 "A Server MUST ignore the _HLS_skip directive if the Playlist
// does not contain the CAN-SKIP-UNTIL attribute, or if it contains an
// EXT-X-ENDLIST tag."
func (p *Playlist) CanSkip() bool { return p.CanSkipUntil > 0 && !p.EndList }

// Skippable is how many segments, from the first, a delta update of p
// replaces: those "further from the end of the last (Parent) Media
// Segment in the Playlist than the Skip Boundary" (§6.2.5.1): the
// segments after one add up to more than CAN-SKIP-UNTIL.
func (p *Playlist) Skippable() int {
	if !p.CanSkip() {
		return 0
	}
	var after int64
	for i := len(p.segs) - 1; i >= 0; i-- {
		if after > p.CanSkipUntil {
			return i + 1
		}
		after += p.segs[i].dur
	}
	return 0
}

// Delta appends to dst the Playlist Delta Update of src, the playlist p
// was parsed from, and returns it with the number of segments skipped.
// With none to skip (or where p cannot skip) it returns dst unchanged and
// 0: the whole playlist is the answer.
//
// The EXT-X-SKIP tag takes the place of the first skipped segment (§4.4.5.2:
// it "replaces the segment URI lines and all Media Segment Tags tags that
// are applied to those segments"). Playlist tags found among the skipped
// lines stay ("All tags that were not skipped MUST remain"), and so do
// their EXT-X-DATERANGE tags unless skip is SkipV2 and the playlist says
// CAN-SKIP-DATERANGES=YES: they were written before the segments after
// them, so more than the Skip Boundary ago (§6.2.5.1). The EXT-X-MAP and
// EXT-X-KEY in effect at the first kept segment are written again after
// the EXT-X-SKIP when that segment has none of its own, so the delta
// update alone says how to read every segment it lists.
func (p *Playlist) Delta(dst, src []byte, skip Skip) ([]byte, int) {
	n := p.Skippable()
	if n == 0 || skip == SkipNone {
		return dst, 0
	}
	v2 := skip == SkipV2 && p.CanSkipDateRanges
	kept := p.segs[n].start
	dst = append(dst, src[:p.first]...)
	dst = append(dst, "#EXT-X-SKIP:SKIPPED-SEGMENTS="...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	if v2 {
		dst = append(dst, `,RECENTLY-REMOVED-DATERANGES=""`...)
	}
	dst = append(dst, '\n')
	var mapLine []byte
	var keys [][]byte
	keysClosed := false
	for off := p.first; off < kept; {
		line, next := nextLine(src, off)
		switch classify(line) {
		case lineTag:
			if playlistTag(line) {
				dst = append(append(dst, line...), '\n')
			}
		case lineDateRange:
			if !v2 {
				dst = append(append(dst, line...), '\n')
			}
		case lineSegmentTag:
			switch {
			case bytes.HasPrefix(line, []byte("#EXT-X-MAP:")):
				mapLine = line
			case bytes.HasPrefix(line, []byte("#EXT-X-KEY:")):
				if keysClosed {
					keys, keysClosed = keys[:0], false
				}
				keys = append(keys, line)
			}
		case lineURI:
			keysClosed = len(keys) > 0
		}
		off = next
	}
	own := src[kept:p.segs[n].end]
	if mapLine != nil && !bytes.Contains(own, []byte("#EXT-X-MAP:")) {
		dst = append(append(dst, mapLine...), '\n')
	}
	if len(keys) > 0 && !bytes.Contains(own, []byte("#EXT-X-KEY:")) {
		for _, k := range keys {
			dst = append(append(dst, k...), '\n')
		}
	}
	return append(dst, src[kept:]...), n
}

// playlistTags are the tags of the playlist as a whole (§4.4.3, and the
// basic and shared tags of §4.3, 4.4.2): they stay in a delta update
// wherever they were.
var playlistTags = [...]string{"#EXT-X-VERSION", "#EXT-X-TARGETDURATION", "#EXT-X-MEDIA-SEQUENCE",
	"#EXT-X-DISCONTINUITY-SEQUENCE", "#EXT-X-ENDLIST", "#EXT-X-PLAYLIST-TYPE", "#EXT-X-I-FRAMES-ONLY",
	"#EXT-X-PART-INF", "#EXT-X-SERVER-CONTROL", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-START", "#EXT-X-DEFINE"}

func playlistTag(line []byte) bool {
	name, _, _ := bytes.Cut(line, []byte(":"))
	for _, t := range playlistTags {
		if string(name) == t {
			return true
		}
	}
	return false
}
