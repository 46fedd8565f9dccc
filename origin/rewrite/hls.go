package rewrite

import (
	"bytes"
)

// uriTags are the tags whose URI attribute names a resource the player
// fetches (RFC 8216 §4.3 and draft-pantos-hls-rfc8216bis for the
// low-latency ones).
var uriTags = []struct {
	tag  []byte
	kind Kind
}{
	{[]byte("#EXT-X-KEY:"), KindKey}, {[]byte("#EXT-X-SESSION-KEY:"), KindKey}, {[]byte("#EXT-X-MAP:"), KindURI},
	{[]byte("#EXT-X-MEDIA:"), KindURI}, {[]byte("#EXT-X-I-FRAME-STREAM-INF:"), KindURI}, {[]byte("#EXT-X-SESSION-DATA:"), KindURI},
	{[]byte("#EXT-X-PART:"), KindURI}, {[]byte("#EXT-X-PRELOAD-HINT:"), KindURI}, {[]byte("#EXT-X-RENDITION-REPORT:"), KindURI},
}

var extM3U = []byte("#EXTM3U")

// HLS appends to dst the playlist src with t's parameters in every URI it
// lists: URI lines and the URI attribute of the tags listed in the
// package documentation. A src that does not start with #EXTM3U (a BOM
// aside) is ErrMalformed; a result longer than t.MaxOut is ErrTooLarge.
// On an error dst holds a partial output and must not be served.
func HLS(dst, src []byte, t *Target) ([]byte, Result, error) {
	r := newRun(t)
	if !bytes.HasPrefix(bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")), extM3U) {
		return dst, r.res, ErrMalformed
	}
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line = src[:i+1]
		}
		src = src[len(line):]
		dst = r.hlsLine(dst, line)
		if t.over(dst) {
			return dst, r.res, ErrTooLarge
		}
	}
	return dst, r.res, nil
}

// hlsLine appends one line, its terminator included.
func (r *run) hlsLine(dst, line []byte) []byte {
	body := bytes.TrimRight(line, "\r\n")
	end := line[len(body):]
	if len(body) == 0 {
		return append(dst, line...)
	}
	if body[0] != '#' {
		// A URI line. RFC 8216 §4.1 allows no whitespace around it, but
		// players trim it: so does the URI's value here, and the
		// whitespace is kept where it was.
		lead := len(body) - len(bytes.TrimLeft(body, " \t"))
		uri := bytes.TrimRight(body[lead:], " \t")
		if len(uri) == 0 {
			return append(dst, line...)
		}
		dst = append(dst, body[:lead]...)
		dst = r.appendURI(dst, uri, uri, r.base, hlsSep, KindURI)
		dst = append(dst, body[lead+len(uri):]...)
		return append(dst, end...)
	}
	for _, u := range uriTags {
		if bytes.HasPrefix(body, u.tag) {
			dst = append(dst, u.tag...)
			dst = r.hlsAttributes(dst, body[len(u.tag):], u.kind)
			return append(dst, end...)
		}
	}
	return append(dst, line...)
}

// hlsAttributes appends an attribute list (RFC 8216 §4.2:
// AttributeName=AttributeValue pairs separated by commas, a quoted-string
// holding no '"', CR or LF) with the URI attribute's value rewritten.
func (r *run) hlsAttributes(dst, list []byte, kind Kind) []byte {
	for len(list) > 0 {
		eq := bytes.IndexByte(list, '=')
		if eq < 0 {
			return append(dst, list...)
		}
		name := list[:eq]
		dst = append(dst, list[:eq+1]...)
		list = list[eq+1:]
		var value []byte
		if len(list) > 0 && list[0] == '"' {
			close := bytes.IndexByte(list[1:], '"')
			if close < 0 {
				return append(dst, list...) // unterminated: left as it is
			}
			value = list[:close+2]
		} else if c := bytes.IndexByte(list, ','); c >= 0 {
			value = list[:c]
		} else {
			value = list
		}
		list = list[len(value):]
		if string(bytes.TrimSpace(name)) == "URI" && len(value) >= 2 && value[0] == '"' {
			uri := value[1 : len(value)-1]
			dst = append(dst, '"')
			dst = r.appendURI(dst, uri, uri, r.base, hlsSep, kind)
			dst = append(dst, '"')
		} else {
			dst = append(dst, value...)
		}
		// The comma (and anything up to the next name) as it was.
		if c := bytes.IndexByte(list, ','); c >= 0 {
			dst = append(dst, list[:c+1]...)
			list = list[c+1:]
		} else {
			return append(dst, list...)
		}
	}
	return dst
}
