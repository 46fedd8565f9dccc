package llhls

import (
	"bytes"
	"errors"
	"math"
)

// ErrNotMediaPlaylist: the bytes are not an HLS media playlist (no
// #EXTM3U first line, or a multivariant playlist's EXT-X-STREAM-INF).
var ErrNotMediaPlaylist = errors.New("llhls: not an HLS media playlist")

// Playlist is what a media playlist says about its live edge and what the
// server may do with it.
type Playlist struct {
	CanBlockReload    bool  // EXT-X-SERVER-CONTROL CAN-BLOCK-RELOAD=YES
	CanSkipUntil      int64 // CAN-SKIP-UNTIL, the Skip Boundary, in microseconds; 0: no delta updates
	CanSkipDateRanges bool  // CAN-SKIP-DATERANGES=YES
	TargetDuration    int64 // EXT-X-TARGETDURATION, in seconds
	PartTarget        int64 // EXT-X-PART-INF PART-TARGET, in microseconds; 0 without
	MediaSequence     int64 // EXT-X-MEDIA-SEQUENCE: the first segment's number
	EndList           bool  // EXT-X-ENDLIST: the playlist will not change
	Segments          int   // whole segments listed (a URI line each)
	LastParts         int   // EXT-X-PART tags listed for the last whole segment
	NextParts         int   // EXT-X-PART tags after it: of segment LastMSN()+1
	// PreloadHint is the URI of the last EXT-X-PRELOAD-HINT of TYPE=PART
	// (§4.4.5.3): the part a client may ask for before it exists; "" when
	// there is none. LastURI is the URI line of the last whole segment.
	// Both as written in the playlist (relative to it, or absolute).
	PreloadHint string
	LastURI     string

	// segs is where each whole segment's lines are and how long it is,
	// for Delta; first is the offset of the first line of a segment.
	segs  []segment
	first int
}

// segment is one whole segment of a parsed playlist: its lines are
// src[start:end] (its tags, then its URI line), its EXTINF duration dur
// microseconds.
type segment struct {
	start, end int
	dur        int64
}

// LastMSN is the Media Sequence Number of the last whole segment (one
// less than MediaSequence when the playlist lists none).
func (p *Playlist) LastMSN() int64 { return p.MediaSequence + int64(p.Segments) - 1 }

// Parse reads src, a media playlist. It keeps no reference to src.
func Parse(src []byte) (Playlist, error) {
	var p Playlist
	if !bytes.HasPrefix(src, []byte("#EXTM3U")) {
		return p, ErrNotMediaPlaylist
	}
	p.first = -1
	var dur int64
	segStart := -1
	for off := 0; off < len(src); {
		line, next := nextLine(src, off)
		switch k := classify(line); {
		case k == lineURI:
			if segStart < 0 {
				segStart = off
			}
			if p.first < 0 {
				p.first = segStart
			}
			p.segs = append(p.segs, segment{start: segStart, end: next, dur: dur})
			p.Segments++
			p.LastURI = string(bytes.TrimSpace(line))
			p.LastParts, p.NextParts = p.NextParts, 0
			segStart, dur = -1, 0
		case k == lineSegmentTag || k == lineDateRange:
			if segStart < 0 {
				segStart = off
			}
			p.tag(line, &dur)
		case k == lineTag:
			if bytes.HasPrefix(line, []byte("#EXT-X-STREAM-INF")) {
				return Playlist{}, ErrNotMediaPlaylist
			}
			p.tag(line, &dur)
		}
		off = next
	}
	return p, nil
}

// tag reads one tag line into p (dur: the EXTINF of the segment being read).
func (p *Playlist) tag(line []byte, dur *int64) {
	name, value, _ := bytes.Cut(line, []byte(":"))
	switch string(name) {
	case "#EXTINF":
		d, _, _ := bytes.Cut(value, []byte(","))
		*dur = parseMicros(d)
	case "#EXT-X-PART":
		p.NextParts++
	case "#EXT-X-TARGETDURATION":
		p.TargetDuration = parseInt(value)
	case "#EXT-X-MEDIA-SEQUENCE":
		p.MediaSequence = max(parseInt(value), 0)
	case "#EXT-X-ENDLIST":
		p.EndList = true
	case "#EXT-X-PRELOAD-HINT":
		if string(attr(value, "TYPE")) == "PART" {
			p.PreloadHint = string(attr(value, "URI"))
		}
	case "#EXT-X-PART-INF":
		p.PartTarget = parseMicros(attr(value, "PART-TARGET"))
	case "#EXT-X-SERVER-CONTROL":
		p.CanBlockReload = string(attr(value, "CAN-BLOCK-RELOAD")) == "YES"
		p.CanSkipUntil = parseMicros(attr(value, "CAN-SKIP-UNTIL"))
		p.CanSkipDateRanges = string(attr(value, "CAN-SKIP-DATERANGES")) == "YES"
	}
}

// Verdict is what a Blocking Playlist Reload gets from one version of
// the playlist.
type Verdict uint8

const (
	Answer Verdict = iota // answer now with this version
	Wait                  // hold the request until the playlist changes
	TooFar                // 400: the request is too far beyond the playlist's end
)

func (v Verdict) String() string {
	switch v {
	case Wait:
		return "wait"
	case TooFar:
		return "too far"
	}
	return "answer"
}

// Decide says what a request with directives r gets from p. A playlist
// that cannot block (no CAN-BLOCK-RELOAD=YES, or EXT-X-ENDLIST: §6.2.5.2
// "A Server MUST ignore _HLS_msn and _HLS_part if the Playlist contains
// an EXT-X-ENDLIST tag") answers at once.
func (p *Playlist) Decide(r Request) Verdict {
	if !r.HasMSN || !p.CanBlockReload || p.EndList {
		return Answer
	}
	last := p.LastMSN()
	// §6.2.5.2: "If the _HLS_msn is greater than the Media Sequence
	// Number of the last Media Segment in the current Playlist plus two,
	// or if the _HLS_part exceeds the last Partial Segment in the current
	// Playlist by the Advance Part Limit, then the server SHOULD
	// immediately return Bad Request".
	if r.MSN > last+2 || r.HasPart && r.MSN == last+1 && r.Part > int64(p.NextParts)-1+p.advancePartLimit() {
		return TooFar
	}
	if p.satisfied(r, last) {
		return Answer
	}
	return Wait
}

// satisfied reports whether p holds segment r.MSN, or with r.HasPart its
// Partial Segment r.Part (or a later segment or part).
func (p *Playlist) satisfied(r Request, last int64) bool {
	switch {
	case !r.HasPart:
		return r.MSN <= last
	case r.MSN < last:
		return true
	case r.MSN == last:
		// "If the Client requests a Part Index greater than that of the
		// final Partial Segment of the Parent Segment, the Server MUST
		// treat the request as one for Part Index 0 of the following
		// Parent Segment." A segment listed without its parts is whole:
		// any part of it is there.
		return p.LastParts == 0 || r.Part < int64(p.LastParts) || p.NextParts > 0
	case r.MSN == last+1:
		return r.Part < int64(p.NextParts)
	}
	return false
}

// advancePartLimit is §6.2.5.2's Advance Part Limit: "3 / Part Target
// Duration, if Part Target Duration < 1 second; otherwise 3" (rounded
// up: parts of a third of a second make 9, not 8.99).
func (p *Playlist) advancePartLimit() int64 {
	const second = 1_000_000
	if p.PartTarget <= 0 || p.PartTarget >= second {
		return 3
	}
	return (3*second + p.PartTarget - 1) / p.PartTarget
}

// BlockLimit is how long a request may wait on p, in seconds: §6.2.5.2
// "A Server that cannot provide the requested Playlist after blocking for
// more than three Target Durations SHOULD return Service Unavailable".
func (p *Playlist) BlockLimit() int64 { return 3 * max(p.TargetDuration, 1) }

// line kinds, as far as Parse and Delta tell them apart.
type lineKind uint8

const (
	lineBlank      lineKind = iota // empty, or a comment
	lineURI                        // a segment's URI
	lineSegmentTag                 // a Media Segment tag (§4.4.4) or EXT-X-PART: applies to the next URI
	lineDateRange                  // EXT-X-DATERANGE
	lineTag                        // any other tag
)

// segmentTags are the tags that apply to the next segment (§4.4.4,
// EXT-X-PART of §4.4.4.9): what an EXT-X-SKIP replaces with its segment.
var segmentTags = [...]string{"#EXTINF", "#EXT-X-BYTERANGE", "#EXT-X-DISCONTINUITY", "#EXT-X-KEY",
	"#EXT-X-MAP", "#EXT-X-PROGRAM-DATE-TIME", "#EXT-X-GAP", "#EXT-X-BITRATE", "#EXT-X-PART"}

func classify(line []byte) lineKind {
	switch {
	case len(line) == 0:
		return lineBlank
	case line[0] != '#':
		return lineURI
	case !bytes.HasPrefix(line, []byte("#EXT")):
		return lineBlank // a comment
	}
	name, _, _ := bytes.Cut(line, []byte(":"))
	if string(name) == "#EXT-X-DATERANGE" {
		return lineDateRange
	}
	for _, t := range segmentTags {
		if string(name) == t {
			return lineSegmentTag
		}
	}
	return lineTag
}

// nextLine returns the line at off (without its CR LF or LF) and the
// offset of the line after it.
func nextLine(src []byte, off int) (line []byte, next int) {
	end := bytes.IndexByte(src[off:], '\n')
	if end < 0 {
		line, next = src[off:], len(src)
	} else {
		line, next = src[off:off+end], off+end+1
	}
	return bytes.TrimSuffix(line, []byte("\r")), next
}

// attr returns the value of the attribute named key in an attribute list
// (§4.2), quotes removed; nil when absent.
func attr(list []byte, key string) []byte {
	for len(list) > 0 {
		var name, value []byte
		name, list, _ = bytes.Cut(list, []byte("="))
		if len(list) > 0 && list[0] == '"' {
			end := bytes.IndexByte(list[1:], '"')
			if end < 0 {
				return nil
			}
			value, list = list[1:1+end], list[2+end:]
			_, list, _ = bytes.Cut(list, []byte(","))
		} else {
			value, list, _ = bytes.Cut(list, []byte(","))
		}
		if string(bytes.TrimSpace(name)) == key {
			return value
		}
	}
	return nil
}

// parseInt reads a decimal-integer; 0 when it is not one (or overflows).
func parseInt(b []byte) int64 {
	n, _ := decimal(bytes.TrimSpace(b))
	return n
}

// parseMicros reads a decimal-floating-point number of seconds as whole
// microseconds (digits past the sixth decimal dropped), so that durations
// add up without a floating point's rounding; 0 when it is not one.
func parseMicros(b []byte) int64 {
	whole, frac, _ := bytes.Cut(bytes.TrimSpace(b), []byte("."))
	if len(whole) == 0 && len(frac) == 0 {
		return 0
	}
	var w int64
	if len(whole) > 0 {
		if w = parseInt(whole); w == 0 && string(whole) != "0" && !allZero(whole) || w > math.MaxInt64/1_000_000-1 {
			return 0
		}
	}
	var f, scale int64 = 0, 100_000
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0
		}
		f += int64(c-'0') * scale
		scale /= 10
	}
	return w*1_000_000 + f
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}
