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

// TidyTransferEncoding rewrites, in place, each complete Transfer-Encoding
// field line of head whose list holds empty elements (",chunked",
// "chunked, ,"): every comma that does not separate two codings becomes a
// space, so that a parser comparing the whole value with "chunked" reads
// the list RFC 9110 §5.6.1 says it is: "a recipient MUST accept empty list
// elements ... and ignore them". Nothing moves: the length stays, and OWS
// is allowed around list elements. It reports whether it changed a byte.
func TidyTransferEncoding(head []byte) (changed bool) {
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			return changed // an incomplete line is tidied once it is whole
		}
		line := head[:i]
		head = head[i+1:]
		const name = "Transfer-Encoding"
		if len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], []byte(name)) {
			changed = tidyList(line[len(name)+1:]) || changed
		}
	}
	return changed
}

// tidyList blanks the commas of v that do not stand between two non-empty
// elements.
func tidyList(v []byte) (changed bool) {
	pending := -1 // the last comma kept: blanked at the end if nothing follows it
	seen := false // a non-empty element since the last comma kept (or the start)
	for i, c := range v {
		switch c {
		case ',':
			if seen {
				pending, seen = i, false
			} else {
				v[i], changed = ' ', true
			}
		case ' ', '\t', '\r':
		default:
			seen = true
		}
	}
	if pending >= 0 && !seen {
		v[pending], changed = ' ', true
	}
	return changed
}

// CodingsBeforeChunked reports whether a Transfer-Encoding value is a list
// that ends in chunked with other codings before it ("gzip, chunked"):
// framed, but by codings an origin that serves files does not implement.
// Empty elements do not count (RFC 9110 §5.6.1).
func CodingsBeforeChunked(v []byte) bool {
	var last []byte
	n := 0
	for e := range bytes.SplitSeq(v, []byte(",")) {
		if e = bytes.TrimSpace(e); len(e) > 0 {
			last = e
			n++
		}
	}
	return n > 1 && bytes.EqualFold(last, []byte("chunked"))
}
