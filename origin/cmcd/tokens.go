package cmcd

import "strconv"

// ObjectType is ot (CTA-5004 §3.3): what the request fetches.
type ObjectType uint8

// Object types; ObjectNone when ot was not given.
const (
	ObjectNone      ObjectType = iota
	ObjectManifest             // m: text file, such as a manifest or playlist
	ObjectAudio                // a: audio only
	ObjectVideo                // v: video only
	ObjectMuxed                // av: muxed audio and video
	ObjectInit                 // i: init segment
	ObjectCaption              // c: caption or subtitle
	ObjectTimedText            // tt: ISOBMFF timed text track
	ObjectKey                  // k: cryptographic key, license or certificate
	ObjectOther                // o: other
	NumObjectTypes             // the number of values, ObjectNone included
)

var objectTokens = [NumObjectTypes]string{"", "m", "a", "v", "av", "i", "c", "tt", "k", "o"}

// String returns the wire token ("" for ObjectNone).
func (t ObjectType) String() string { return tokenName(objectTokens[:], int(t)) }

func parseObjectType(s string) ObjectType { return ObjectType(tokenIndex(objectTokens[:], s)) }

// StreamingFormat is sf: the streaming protocol the player speaks.
type StreamingFormat uint8

// Streaming formats; FormatNone when sf was not given.
const (
	FormatNone   StreamingFormat = iota
	FormatDASH                   // d: MPEG DASH
	FormatHLS                    // h: HTTP Live Streaming
	FormatSmooth                 // s: Smooth Streaming
	FormatOther                  // o: other
	NumStreamingFormats
)

var formatTokens = [NumStreamingFormats]string{"", "d", "h", "s", "o"}

// String returns the wire token ("" for FormatNone).
func (f StreamingFormat) String() string { return tokenName(formatTokens[:], int(f)) }

func parseStreamingFormat(s string) StreamingFormat {
	return StreamingFormat(tokenIndex(formatTokens[:], s))
}

// StreamType is st: video on demand or live.
type StreamType uint8

// Stream types; StreamNone when st was not given.
const (
	StreamNone StreamType = iota
	StreamVOD             // v: all segments available
	StreamLive            // l: segments become available over time
	numStreamTypes
)

var streamTokens = [numStreamTypes]string{"", "v", "l"}

// String returns the wire token ("" for StreamNone).
func (t StreamType) String() string { return tokenName(streamTokens[:], int(t)) }

func parseStreamType(s string) StreamType { return StreamType(tokenIndex(streamTokens[:], s)) }

func tokenName(tokens []string, i int) string {
	if i < len(tokens) {
		return tokens[i]
	}
	return "?" + strconv.Itoa(i)
}

// tokenIndex returns the index of s in tokens, 0 (none) when absent.
func tokenIndex(tokens []string, s string) int {
	for i := 1; i < len(tokens); i++ {
		if tokens[i] == s {
			return i
		}
	}
	return 0
}

// AppendTo appends d in the canonical CTA-5004 form (keys in alphabetical
// order, as §3.2 recommends, comma-separated): what a player would send,
// and what Parse reads back to the same Data.
func (d *Data) AppendTo(dst []byte) []byte {
	start := len(dst)
	for k := Key(0); k < numKeys; k++ {
		if !d.Has(k) {
			continue
		}
		if len(dst) > start {
			dst = append(dst, ',')
		}
		dst = append(dst, k.String()...)
		dst = d.appendValue(dst, k)
	}
	return dst
}

// appendValue appends "=value" for k, or nothing for a true Boolean.
func (d *Data) appendValue(dst []byte, k Key) []byte {
	switch k {
	case KeyBS, KeySU:
		if v := k == KeyBS && d.BufferStarvation || k == KeySU && d.Startup; !v {
			dst = append(dst, "=?0"...)
		}
		return dst
	case KeyPR:
		return strconv.AppendFloat(append(dst, '='), d.PlaybackRate, 'f', -1, 64)
	case KeyOT:
		return append(append(dst, '='), d.ObjectType.String()...)
	case KeySF:
		return append(append(dst, '='), d.StreamingFormat.String()...)
	case KeyST:
		return append(append(dst, '='), d.StreamType.String()...)
	case KeyCID:
		return appendQuoted(append(dst, '='), d.ContentID)
	case KeySID:
		return appendQuoted(append(dst, '='), d.SessionID)
	case KeyNOR:
		return appendQuoted(append(dst, '='), d.NextObject)
	case KeyNRR:
		return appendQuoted(append(dst, '='), d.NextRange)
	}
	return strconv.AppendInt(append(dst, '='), *d.intField(k), 10)
}

func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}
