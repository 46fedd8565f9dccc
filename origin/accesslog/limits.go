package accesslog

// A logged field holds bytes a client chose, and escaping can make them
// several times longer (one byte of invalid UTF-8 is four in a combined
// line, six in JSON). Each field is therefore cut to a fixed number of
// bytes as written, escapes included, the cut marked with cutMark, so that
// no request decides how long its line is. GoAccess (1.7) reads a line
// over 4,096 bytes as a failed request: a combined line never reaches that.
const (
	// MaxCombinedLine bounds a combined line, its newline included.
	MaxCombinedLine = 4095
	// MaxJSONLine bounds a JSON line, its newline included.
	MaxJSONLine = 8192

	// Caps by field, in bytes written (escaped, cut mark included).
	maxClient    = 64
	maxMethod    = 32
	maxProto     = 16
	maxPath      = 1024
	maxQuery     = 1024
	maxReferer   = 768
	maxUserAgent = 768
	maxHost      = 256 // JSON only
	maxRange     = 256 // JSON only
	maxShort     = 64  // JSON only: token_kid, via, cache
	maxCMCDID    = 256 // JSON only: cmcd cid and sid
	maxCMCDNext  = 512 // JSON only: cmcd nor and nrr
	cutMark      = "...(cut)"
)

// fieldCut cuts one field's output at its cap: the escaper calls mark
// before each escaped piece (a byte, a rune or an escape sequence, never
// split) and stops at the first piece that takes the field past its cap,
// keeping what fits with the mark after it.
type fieldCut struct{ start, safe, limit int }

func newFieldCut(dst []byte, limit int) fieldCut {
	return fieldCut{start: len(dst), safe: len(dst), limit: limit}
}

// mark records len(dst) as a place to cut when the mark still fits after it.
func (c *fieldCut) mark(dst []byte) {
	if len(dst)-c.start <= c.limit-len(cutMark) {
		c.safe = len(dst)
	}
}

// over reports whether the field has passed its cap.
func (c *fieldCut) over(dst []byte) bool { return len(dst)-c.start > c.limit }

// cut returns dst cut back to the last mark that fits, with the cut mark.
func (c *fieldCut) cut(dst []byte) []byte { return append(dst[:c.safe], cutMark...) }
