package origin

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

// mediaTypes is built in rather than read from the host's mime database:
// Debian's maps .ts to a Qt translation type and knows neither .m4s nor
// .mpd, and a player given the wrong type refuses the stream.
var mediaTypes = map[string]mediaType{
	"m3u8":   {"application/vnd.apple.mpegurl", kindPlaylist},
	"m3u":    {"audio/mpegurl", kindPlaylist},
	"mpd":    {"application/dash+xml", kindPlaylist},
	"ts":     {"video/mp2t", kindSegment},
	"m4s":    {"video/iso.segment", kindSegment},
	"mp4":    {"video/mp4", kindSegment},
	"m4v":    {"video/mp4", kindSegment},
	"cmfv":   {"video/mp4", kindSegment},
	"m4a":    {"audio/mp4", kindSegment},
	"cmfa":   {"audio/mp4", kindSegment},
	"aac":    {"audio/aac", kindSegment},
	"mp3":    {"audio/mpeg", kindSegment},
	"webm":   {"video/webm", kindSegment},
	"vtt":    {"text/vtt; charset=utf-8", kindSegment},
	"webvtt": {"text/vtt; charset=utf-8", kindSegment},
	"ttml":   {"application/ttml+xml", kindSegment},
	"key":    {"application/octet-stream", kindOther},
	"jpg":    {"image/jpeg", kindSegment},
	"jpeg":   {"image/jpeg", kindSegment},
	"png":    {"image/png", kindSegment},
	"webp":   {"image/webp", kindSegment},
	"json":   {"application/json", kindOther},
	"txt":    {"text/plain; charset=utf-8", kindOther},
	"html":   {"text/html; charset=utf-8", kindOther},
	"js":     {"text/javascript; charset=utf-8", kindOther},
	"css":    {"text/css; charset=utf-8", kindOther},
}

const defaultContentType = "application/octet-stream"

func lookupType(name string) mediaType {
	if mt, ok := mediaTypes[extOf(name)]; ok {
		return mt
	}
	return mediaType{defaultContentType, kindOther}
}
