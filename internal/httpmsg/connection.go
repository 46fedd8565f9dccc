package httpmsg

import "bytes"

// AsksClose reports whether a raw header block has a Connection field
// whose list holds the "close" option (RFC 9112 §9.6), in any case, in
// any of its lines. It reads the raw block because a parser may report
// "close" for reasons of its own (fasthttp does for every version other
// than HTTP/1.1).
func AsksClose(raw []byte) bool { return hasConnectionOption(raw, "close") }

// AsksKeepAlive reports whether a raw header block has a Connection field
// whose list holds "keep-alive", in any of its lines: an HTTP/1.0 client
// asks for a persistent connection so (RFC 9112 §9.3), and RFC 9110 §5.3
// makes two field lines one list.
func AsksKeepAlive(raw []byte) bool { return hasConnectionOption(raw, "keep-alive") }

func hasConnectionOption(raw []byte, option string) bool {
	for v := range fieldValues(raw, "Connection") {
		for opt := range bytes.SplitSeq(v, []byte(",")) {
			if bytes.EqualFold(bytes.TrimSpace(opt), []byte(option)) {
				return true
			}
		}
	}
	return false
}
