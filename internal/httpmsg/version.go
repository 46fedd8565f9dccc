package httpmsg

import "bytes"

// RequestLineMajor returns the major version a request line names
// ("PRI * HTTP/2.0" names 2), for a request that a parser refused for
// another reason before it looked at the version: fasthttp refuses the
// HTTP/2 connection preface for its "*" target, where RFC 9110 §15.6.6
// answers 505, "the server does not support ... the major version of HTTP
// that was used in the request message". ok is false unless b's first
// line is complete and ends in "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3).
func RequestLineMajor(b []byte) (major byte, ok bool) {
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		return 0, false
	}
	line := bytes.TrimSuffix(b[:end], []byte("\r"))
	sp := bytes.LastIndexByte(line, ' ')
	if sp < 0 {
		return 0, false
	}
	v := line[sp+1:]
	if len(v) != len("HTTP/1.1") || string(v[:len("HTTP/")]) != "HTTP/" || v[6] != '.' ||
		!isDigit(v[5]) || !isDigit(v[7]) {
		return 0, false
	}
	return v[5] - '0', true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
