package token

import "strings"

// redactedMAC replaces hmac values in Redact's output.
const redactedMAC = "redacted"

// Redact returns tok with the value of every hmac= field (in any case) replaced by
// "redacted", for logs: the rest of a token (scope, times, key id) is
// what an operator needs to see, and without the MAC it grants nothing. A
// token in its path-segment form is decoded first, since the segment
// carries the MAC too. Text that is neither form is returned as is, cut
// to the length of the longest segment, with "..." marking the cut.
func Redact(tok string) string {
	if !hasMACField(tok) {
		if raw, err := ParseSegment(tok); err == nil && hasMACField(raw) {
			tok = raw
		}
	}
	if !hasMACField(tok) {
		if len(tok) > maxSegmentLen {
			return tok[:maxSegmentLen] + "..."
		}
		return tok
	}
	if len(tok) > MaxTokenLen {
		tok = tok[:MaxTokenLen]
	}
	var b strings.Builder
	for i, field := range strings.Split(tok, "~") {
		if i > 0 {
			b.WriteByte('~')
		}
		if name, _, ok := strings.Cut(field, "="); ok && strings.EqualFold(name, "hmac") {
			field = name + "=" + redactedMAC
		}
		b.WriteString(field)
	}
	return b.String()
}

// hasMACField reports whether s may hold an hmac= field, in any case.
func hasMACField(s string) bool {
	return strings.Contains(strings.ToLower(s), "hmac=")
}
