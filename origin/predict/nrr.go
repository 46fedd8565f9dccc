package predict

import (
	"strconv"
	"strings"
)

// ParseNextRange parses a CMCD (CTA-5004) nrr value, the byte range of the
// player's next request: "<start>-<end>" (inclusive, as in an HTTP Range)
// or "<start>-" (to the end, returned as n = -1). The payload itself is
// parsed by package origin/cmcd; this turns its string into a span.
func ParseNextRange(s string) (off, n int64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	off, err := strconv.ParseInt(a, 10, 64)
	if err != nil || off < 0 {
		return 0, 0, false
	}
	if b == "" {
		return off, -1, true
	}
	end, err := strconv.ParseInt(b, 10, 64)
	if err != nil || end < off || end-off >= 1<<40 {
		return 0, 0, false
	}
	return off, end - off + 1, true
}
