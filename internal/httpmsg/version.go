package httpmsg

import "bytes"

// RequestLineMajor returns the major version a request line names
// ("PRI * HTTP/2.0" names 2), for a request that a parser refused for
// another reason before it looked at the version: fasthttp refuses the
// HTTP/2 connection preface for its "*" target, where RFC 9110 §15.6.6
// answers 505, "the server does not support ... the major version of HTTP
// that was used in the request message". ok is false unless b's first
// line is complete and well formed (RFC 9112 §3): method SP
// request-target SP "HTTP/" DIGIT "." DIGIT CRLF, the method a token and
// the target visible characters. A line that is not is malformed whatever
// version it names (400): and the answer must not depend on how far a
// refused request had arrived.
func RequestLineMajor(b []byte) (major byte, ok bool) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		return 0, false
	}
	line := b[:end]
	method, rest, ok1 := bytes.Cut(line, []byte(" "))
	target, v, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 {
		return 0, false
	}
	for _, c := range method {
		if !IsTchar(c) {
			return 0, false
		}
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return 0, false
		}
	}
	if len(v) != len("HTTP/1.1") || string(v[:len("HTTP/")]) != "HTTP/" || v[6] != '.' ||
		!isDigit(v[5]) || !isDigit(v[7]) {
		return 0, false
	}
	return v[5] - '0', true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
