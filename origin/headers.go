package origin

import (
	"fmt"
	"maps"
	"mime"
	"strings"

	"github.com/valyala/fasthttp"
)

// kind is the class of a file for caching purposes.
type kind uint8

const (
	kindOther    kind = iota
	kindPlaylist      // HLS playlists and DASH manifests: may be rewritten by a packager
	kindSegment       // media segments and init segments: immutable once published
)

func (k kind) String() string {
	switch k {
	case kindPlaylist:
		return "playlist"
	case kindSegment:
		return "segment"
	}
	return "other"
}

type mediaType struct {
	contentType string
	kind        kind
}

// builtinTypes is built in rather than read from the host's mime database:
// Debian's maps .ts to a Qt translation type and knows neither .m4s nor
// .mpd, and a player given the wrong type refuses the stream. Config.Types
// (-mime) adds to it or overrides it.
var builtinTypes = map[string]mediaType{
	// Playlists and manifests.
	"m3u8": {"application/vnd.apple.mpegurl", kindPlaylist},
	"m3u":  {"audio/mpegurl", kindPlaylist},
	"mpd":  {"application/dash+xml", kindPlaylist},
	// Media segments, init segments and whole media files.
	"ts":   {"video/mp2t", kindSegment},
	"m2ts": {"video/mp2t", kindSegment},
	"mts":  {"video/mp2t", kindSegment},
	"m4s":  {"video/iso.segment", kindSegment},
	"mp4":  {"video/mp4", kindSegment},
	"m4v":  {"video/mp4", kindSegment},
	"mov":  {"video/quicktime", kindSegment},
	"m4a":  {"audio/mp4", kindSegment},
	"aac":  {"audio/aac", kindSegment},
	"ac3":  {"audio/ac3", kindSegment},
	"ec3":  {"audio/eac3", kindSegment},
	"mp3":  {"audio/mpeg", kindSegment},
	"flac": {"audio/flac", kindSegment},
	"ogg":  {"audio/ogg", kindSegment},
	"oga":  {"audio/ogg", kindSegment},
	"opus": {"audio/ogg", kindSegment},
	"webm": {"video/webm", kindSegment},
	"mkv":  {"video/x-matroska", kindSegment},
	"mka":  {"audio/x-matroska", kindSegment},
	// CMAF (CTA-5005 / ISO 23000-19 Annex: the .cmf? extensions): video,
	// audio, text and metadata tracks are ISO BMFF.
	"cmfv": {"video/mp4", kindSegment},
	"cmfa": {"audio/mp4", kindSegment},
	"cmft": {"application/mp4", kindSegment},
	"cmfm": {"application/mp4", kindSegment},
	// Subtitles and captions.
	"vtt":    {"text/vtt; charset=utf-8", kindSegment},
	"webvtt": {"text/vtt; charset=utf-8", kindSegment},
	"ttml":   {"application/ttml+xml", kindSegment},
	"dfxp":   {"application/ttml+xml", kindSegment},
	"srt":    {"application/x-subrip", kindSegment},
	"ssa":    {"text/x-ssa; charset=utf-8", kindSegment},
	"ass":    {"text/x-ssa; charset=utf-8", kindSegment},
	// Images: posters, thumbnails, trick-play sprites.
	"jpg":  {"image/jpeg", kindSegment},
	"jpeg": {"image/jpeg", kindSegment},
	"png":  {"image/png", kindSegment},
	"webp": {"image/webp", kindSegment},
	"avif": {"image/avif", kindSegment},
	"gif":  {"image/gif", kindSegment},
	// Keys (HLS AES-128), metadata and the rest a VOD origin holds.
	"key":  {"application/octet-stream", kindOther},
	"json": {"application/json", kindOther},
	"xml":  {"application/xml", kindOther},
	"txt":  {"text/plain; charset=utf-8", kindOther},
	"html": {"text/html; charset=utf-8", kindOther},
	"js":   {"text/javascript; charset=utf-8", kindOther},
	"css":  {"text/css; charset=utf-8", kindOther},
}

const defaultContentType = "application/octet-stream"

// lookupType is the media type of name by its extension, in the tables
// of the policy ctx pinned.
func (rs *responder) lookupType(ctx *fasthttp.RequestCtx, name string) mediaType {
	if mt, ok := rs.tab(ctx).types[extOf(name)]; ok {
		return mt
	}
	return mediaType{defaultContentType, kindOther}
}

// MediaTypeRule maps a file extension to a Content-Type and a kind of
// file, which picks the Cache-Control class (-mime .ext=type[:kind]).
type MediaTypeRule struct {
	Ext         string // without the dot, any case
	ContentType string // a media type, parameters allowed ("text/vtt; charset=utf-8")
	Kind        string // "playlist", "segment" or "other"; "": the built-in kind of Ext, or other
}

// ParseMediaTypeRule parses the -mime form ".ext=type[:kind]".
func ParseMediaTypeRule(s string) (MediaTypeRule, error) {
	ext, typ, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return MediaTypeRule{}, fmt.Errorf("mime %q: want .ext=type[:kind]", s)
	}
	r := MediaTypeRule{Ext: strings.TrimPrefix(strings.TrimSpace(ext), "."), ContentType: strings.TrimSpace(typ)}
	if i := strings.LastIndexByte(r.ContentType, ':'); i >= 0 {
		r.ContentType, r.Kind = strings.TrimSpace(r.ContentType[:i]), strings.TrimSpace(r.ContentType[i+1:])
	}
	if !strings.HasPrefix(strings.TrimSpace(ext), ".") {
		return MediaTypeRule{}, fmt.Errorf("mime %q: the extension must start with '.' (.cmfv=video/mp4)", s)
	}
	return r, r.validate()
}

func (r MediaTypeRule) validate() error {
	if r.Ext == "" || strings.ContainsAny(r.Ext, "./\\ \t=") {
		return fmt.Errorf("mime .%s: want one extension such as .cmfv (no dot, slash or space inside)", r.Ext)
	}
	switch r.Kind {
	case "", "playlist", "segment", "other":
	default:
		return fmt.Errorf("mime .%s: kind %q, want playlist, segment or other (the Cache-Control class)", r.Ext, r.Kind)
	}
	// A Content-Type a browser or player can parse: RFC 9110 §8.3.1,
	// media-type = type "/" subtype parameters.
	if _, _, err := mime.ParseMediaType(r.ContentType); err != nil || !strings.Contains(r.ContentType, "/") {
		return fmt.Errorf("mime .%s: %q is not a media type (type/subtype[; parameters])", r.Ext, r.ContentType)
	}
	if strings.IndexFunc(r.ContentType, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0 {
		return fmt.Errorf("mime .%s: the type holds a control character", r.Ext)
	}
	return nil
}

// mediaTypeTable is builtinTypes with rules applied in order (a later
// rule for the same extension wins).
func mediaTypeTable(rules []MediaTypeRule) map[string]mediaType {
	t := maps.Clone(builtinTypes)
	for _, r := range rules {
		ext := strings.ToLower(r.Ext)
		mt := mediaType{contentType: r.ContentType, kind: t[ext].kind} // other when new
		switch r.Kind {
		case "playlist":
			mt.kind = kindPlaylist
		case "segment":
			mt.kind = kindSegment
		case "other":
			mt.kind = kindOther
		}
		t[ext] = mt
	}
	return t
}
