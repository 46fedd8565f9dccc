package predict

import (
	"net/url"
	"strconv"
	"strings"
)

// CMCD is what CTA-5004 keys nor ("next object request": a relative URL,
// URL-encoded) and nrr ("next range request": "<start>-<end>" or
// "<start>-") say about the request a player will make next.
type CMCD struct {
	Next     string // nor, URL-decoded; "" when absent
	HasRange bool   // nrr was given
	Off, Len int64  // nrr's span; Len -1: to the end
}

// ParseCMCD reads nor and nrr from a CMCD payload: the value of the CMCD
// query argument (already query-decoded) or of the CMCD-Request header.
// Keys are comma-separated key[=value] pairs; string values are quoted
// with \" and \\ escapes. Unknown keys and malformed values are ignored:
// CMCD is a hint, and a malformed hint is no hint.
func ParseCMCD(s string) CMCD {
	var c CMCD
	for len(s) > 0 {
		var kv string
		kv, s = nextPair(s)
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "nor":
			if str, ok := unquote(v); ok {
				if dec, err := url.PathUnescape(str); err == nil {
					c.Next = dec
				}
			}
		case "nrr":
			if str, ok := unquote(v); ok {
				c.Off, c.Len, c.HasRange = parseNRR(str)
			}
		}
	}
	return c
}

// nextPair splits off the first comma-separated pair, honouring quotes.
func nextPair(s string) (pair, rest string) {
	quoted, esc := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case esc:
			esc = false
		case c == '\\' && quoted:
			esc = true
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

func unquote(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	v = v[1 : len(v)-1]
	if !strings.Contains(v, `\`) {
		return v, true
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String(), true
}

// parseNRR parses "<start>-<end>" (inclusive, as in HTTP Range) or
// "<start>-".
func parseNRR(s string) (off, n int64, ok bool) {
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
