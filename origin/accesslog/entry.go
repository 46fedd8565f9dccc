package accesslog

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"segorigin/origin/cmcd"
)

// Format is an access log line format.
type Format uint8

// The formats ParseFormat knows.
const (
	Combined Format = iota
	JSON
)

// ParseFormat returns the format named "combined" or "json".
func ParseFormat(name string) (Format, error) {
	switch name {
	case "combined":
		return Combined, nil
	case "json":
		return JSON, nil
	}
	return 0, fmt.Errorf("access log format %q: want combined or json", name)
}

func (f Format) String() string {
	if f == JSON {
		return "json"
	}
	return "combined"
}

// Entry is one response, as logged. Byte slices may alias the request's
// buffers: they are read only during Append. The JSON field name of each
// is in its comment; text fields are cut to the caps in limits.go.
//
// A request refused before it was parsed has the parts of its request
// line as they arrived, split at its first two spaces (Method holds bytes
// that are no request line at all, whole), and none when no line arrived.
type Entry struct {
	Time         time.Time     // "time": when the request was read, RFC 3339 with µs, UTC
	Client       []byte        // "client": the client's address
	Method       []byte        // "method"
	Path         []byte        // "path": as sent (percent-encoded), tokens redacted
	Query        []byte        // "query": without "?", tokens redacted; "" when none
	Proto        []byte        // "proto": "HTTP/1.1"
	Host         []byte        // "host": the Host header
	Status       int           // "status"
	Bytes        int64         // "bytes": body bytes sent (multipart framing included)
	Range        []byte        // "range": the Range header as sent; "" when none
	Duration     time.Duration // "duration": seconds, from reading the request to the last body byte handed to the kernel
	Via          string        // "via": body path: "sendfile", "ktls", "copy", or "" when fasthttp wrote the body from memory
	Cache        string        // "cache": file cache outcome: "hit", "miss", "negative_hit", or "" when no file was looked up
	Referer      []byte        // "referer", tokens redacted
	UserAgent    []byte        // "user_agent"
	TokenKeyID   string        // "token_kid": kid= of the request's token; "" when none
	TokenExpires string        // "token_exp": exp= of the request's token, a number; null when none
	CMCD         *cmcd.Data    // "cmcd": the keys given, by their CTA-5004 names; {} when none
	CMCDError    bool          // "cmcd_malformed": some CMCD entry was dropped as malformed
}

// Append appends e as one line (with its newline) in format f.
func (f Format) Append(dst []byte, e *Entry) []byte {
	if f == JSON {
		return appendJSON(dst, e)
	}
	return appendCombined(dst, e)
}

// appendCombined: nginx's
//
//	log_format combined '$remote_addr - $remote_user [$time_local] '
//	                    '"$request" $status $body_bytes_sent '
//	                    '"$http_referer" "$http_user_agent"';
func appendCombined(dst []byte, e *Entry) []byte {
	dst = appendEscaped(dst, e.Client, false, maxClient)
	dst = append(dst, " - - ["...)
	dst = e.Time.AppendFormat(dst, "02/Jan/2006:15:04:05 -0700")
	dst = append(dst, "] \""...)
	dst = appendRequest(dst, e)
	dst = append(dst, "\" "...)
	dst = strconv.AppendInt(dst, int64(e.Status), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, e.Bytes, 10)
	dst = append(dst, " \""...)
	dst = appendEscaped(dst, e.Referer, true, maxReferer)
	dst = append(dst, "\" \""...)
	dst = appendEscaped(dst, e.UserAgent, true, maxUserAgent)
	return append(dst, "\"\n"...)
}

// appendRequest writes nginx's $request: "METHOD TARGET PROTO" for a
// request line of three parts; of one refused before it was parsed (see
// Entry), the parts it had, with no space for a missing one, and "-" when
// no line arrived.
func appendRequest(dst []byte, e *Entry) []byte {
	target := len(e.Path) > 0 || len(e.Query) > 0
	if len(e.Method) == 0 && !target && len(e.Proto) == 0 {
		return append(dst, '-')
	}
	dst = appendEscaped(dst, e.Method, false, maxMethod)
	if target || len(e.Proto) > 0 {
		dst = append(dst, ' ')
		dst = appendEscaped(dst, e.Path, false, maxPath)
		if len(e.Query) > 0 {
			dst = append(dst, '?')
			dst = appendEscaped(dst, e.Query, false, maxQuery)
		}
	}
	if len(e.Proto) > 0 {
		dst = append(dst, ' ')
		dst = appendEscaped(dst, e.Proto, false, maxProto)
	}
	return dst
}

// appendEscaped writes b as nginx's escape=default does ('"', '\\',
// control bytes and DEL as \xHH), but keeps valid UTF-8 (nginx escapes
// every byte above 0x7e) so that a redaction mark or a non-ASCII file name
// stays readable; invalid UTF-8 is escaped byte by byte. dash writes "-"
// for an empty value, as nginx does for an absent header.
//
// The output is cut at limit bytes (see limits.go).
func appendEscaped(dst, b []byte, dash bool, limit int) []byte {
	if len(b) == 0 {
		if dash {
			return append(dst, '-')
		}
		return dst
	}
	const hex = "0123456789ABCDEF"
	fc := newFieldCut(dst, limit)
	for i := 0; i < len(b); {
		fc.mark(dst)
		c := b[i]
		n := 1
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
				n = size
			}
		}
		switch {
		case n > 1:
			dst = append(dst, b[i:i+n]...)
		case c < 0x20 || c == '"' || c == '\\' || c >= 0x7f:
			dst = append(dst, '\\', 'x', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
		i += n
		if fc.over(dst) {
			return fc.cut(dst)
		}
	}
	return dst
}
