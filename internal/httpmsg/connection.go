package httpmsg

import "bytes"

// AsksClose reports whether a raw header block has a Connection field
// whose list holds the "close" option (RFC 9112 §9.6), in any case, in
// any of its lines. It reads the raw block because a parser may report
// "close" for reasons of its own (fasthttp does for every version other
// than HTTP/1.1).
func AsksClose(raw []byte) bool {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 || !bytes.EqualFold(line[:colon], []byte("Connection")) {
			continue
		}
		for opt := range bytes.SplitSeq(line[colon+1:], []byte(",")) {
			if bytes.EqualFold(bytes.TrimSpace(opt), []byte("close")) {
				return true
			}
		}
	}
	return false
}
