package httpmsg

import (
	"bytes"
	"iter"
	"net/netip"
)

// ValidHost reports whether v is a valid Host field value, RFC 9112 §3.2
// with RFC 3986 §3.2.2: Host = uri-host [ ":" port ], uri-host =
// IP-literal / IPv4address / reg-name. "A server MUST respond with a 400
// (Bad Request) status code to any HTTP/1.1 request message that ...
// contains ... a Host header field with an invalid field value." A port
// is digits, at most 65535 (RFC 9110 §4.2.1 ties it to a TCP port).
// Userinfo ("u@host") is no part of Host.
func ValidHost(v []byte) bool {
	host, port := v, []byte(nil)
	if len(v) > 0 && v[0] == '[' {
		end := bytes.IndexByte(v, ']')
		if end < 0 || !validIPLiteral(v[1:end]) {
			return false
		}
		host, port = nil, v[end+1:]
		if len(port) > 0 {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
		} else {
			port = nil
		}
		return port == nil || validPort(port)
	}
	if i := bytes.LastIndexByte(v, ':'); i >= 0 {
		host, port = v[:i], v[i+1:]
		if !validPort(port) {
			return false
		}
	}
	for _, c := range host {
		if !regName[c] {
			return false
		}
	}
	return true
}

// regName is isRegNameChar of every byte: one load per character of a
// Host, which every request has checked (the comparisons and the switch
// were most of ValidHost's time).
var regName = func() (t [256]bool) {
	for c := range len(t) {
		t[c] = isRegNameChar(byte(c))
	}
	return t
}()

// validPort: *DIGIT (an empty port is allowed: RFC 3986 §3.2.3), at most
// 65535.
func validPort(p []byte) bool {
	if len(p) > 5 {
		return false
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n <= 65535
}

// validIPLiteral: IPv6address (no zone: RFC 3986 has none) or IPvFuture
// ("v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )).
func validIPLiteral(s []byte) bool {
	if len(s) > 0 && (s[0] == 'v' || s[0] == 'V') {
		dot := bytes.IndexByte(s, '.')
		if dot < 2 || dot == len(s)-1 {
			return false
		}
		for _, c := range s[1:dot] {
			if _, ok := hexValue(c); !ok {
				return false
			}
		}
		for _, c := range s[dot+1:] {
			if c != ':' && !isRegNameChar(c) || c == '%' {
				return false
			}
		}
		return true
	}
	a, err := netip.ParseAddr(string(s))
	return err == nil && a.Is6() && a.Zone() == ""
}

// isRegNameChar: unreserved / pct-encoded / sub-delims (RFC 3986 §3.2.2);
// the "%" of pct-encoded is let through without its two hex digits being
// checked, which cannot make a host ambiguous.
func isRegNameChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '%', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=':
		return true
	}
	return false
}

// AbsoluteAuthority returns the authority of a request-target in
// absolute-form ("http://host:port/path"), and whether target is in that
// form at all (RFC 9112 §3.2.2). The scheme is compared without regard to
// case (RFC 3986 §3.1).
func AbsoluteAuthority(target []byte) (authority []byte, ok bool) {
	if len(target) > 0 && target[0] == '/' {
		return nil, false // origin-form, as nearly every request is
	}
	i := bytes.Index(target, []byte("://"))
	if i <= 0 || bytes.IndexByte(target[:i], '/') >= 0 {
		return nil, false
	}
	rest := target[i+3:]
	end := bytes.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	return rest[:end], true
}

// ValidAuthority reports whether the authority of an absolute-form target
// may be served: RFC 9110 §4.2.1, "A sender MUST NOT generate an "http"
// URI with an empty host identifier. A recipient that processes such a
// URI reference MUST reject it as invalid"; §4.2.4, userinfo "SHOULD" be
// treated as an error; and the rest as a Host value.
func ValidAuthority(a []byte) bool {
	if len(a) == 0 || a[0] == ':' || bytes.IndexByte(a, '@') >= 0 {
		return false
	}
	return ValidHost(a)
}

// FieldValue returns the value of the first raw field line for the field
// named name (compared without regard to case, RFC 9110 §5.1), without
// its surrounding whitespace, and whether there is one.
func FieldValue(raw []byte, name string) ([]byte, bool) {
	for v := range fieldValues(raw, name) {
		return bytes.Trim(v, " \t\r"), true
	}
	return nil, false
}

// FieldList returns the values of every raw field line for the field
// named name joined in order by ", ": the one list they make (RFC 9110
// §5.3). It allocates: for refusals, not for every request.
func FieldList(raw []byte, name string) []byte {
	var list []byte
	for v := range fieldValues(raw, name) {
		if list != nil {
			list = append(list, ", "...)
		}
		list = append(list, bytes.Trim(v, " \t\r")...)
	}
	return list
}

// MaskField returns a copy of raw in which every field line for the field
// named name (its name at the start of a line, then ':') is renamed: its
// first byte becomes 'X', so the line keeps its length and is a field no
// parser gives a meaning. It is the header as it would read without that
// field, for a refusal to tell whether the field alone refused it; found
// says whether there was such a line.
func MaskField(raw []byte, name string) (masked []byte, found bool) {
	masked = bytes.Clone(raw)
	for at := 0; at < len(masked); {
		line := masked[at:]
		end := len(line)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			end = i + 1
		}
		if len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], []byte(name)) {
			line[0], found = 'X', true
		}
		at += end
	}
	return masked, found
}

// fieldValues yields the value, as received, of each raw field line for
// the field named name.
func fieldValues(raw []byte, name string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for len(raw) > 0 {
			line := raw
			if i := bytes.IndexByte(raw, '\n'); i >= 0 {
				line, raw = raw[:i], raw[i+1:]
			} else {
				raw = nil
			}
			if len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], []byte(name)) {
				if !yield(line[len(name)+1:]) {
					return
				}
			}
		}
	}
}
