package token

import (
	"bytes"
	"net/url"
	"strings"

	"segorigin/internal/percent"
)

// Elision replaces a token, or a token's MAC, in text that a Redactor
// cleans.
const Elision = "…"

// Redactor hides tokens in text that is about to be logged: a request
// target, a Referer, a header or cookie value, or a message that echoes
// request bytes. Redaction is by shape, so it also cleans text that does
// not parse as a URL:
//
//   - "/<prefix>/<segment>" (the path carrier) becomes "/<prefix>/…";
//   - "<param>=<value>" for each carrier parameter or cookie name (after
//     start of text, '?', '&', ';' or a space) keeps the name, "=…";
//   - "hmac=<value>" in any case, not after a letter or digit (a raw
//     token, under any parameter name) keeps the name, "=…";
//   - any other base64url run that decodes to a token with a MAC (a
//     segment under another prefix, or in text that is not a URL) becomes
//     "…";
//   - each of these in the percent-decoded form of text (decoded again
//     while escapes remain), the span it covers in text becoming "…".
//
// What stays is what an operator needs to debug a refusal: the key id and
// expiry of the first token seen, returned separately (Info), and the
// file's path. The zero Redactor cleans only hmac= fields.
type Redactor struct {
	carrier string   // "/t/", or "" without a path carrier
	params  []string // "token=", "segorigin_token=", "md5=": names with '='
}

// NewRedactor returns a Redactor for the path carrier prefix ("t"; "" for
// none) and the query parameters and cookie names that carry tokens or
// MACs ("token", "segorigin_token", "md5").
func NewRedactor(pathPrefix string, params ...string) Redactor {
	var r Redactor
	if p := strings.Trim(pathPrefix, "/"); p != "" {
		r.carrier = "/" + p + "/"
	}
	for _, p := range params {
		if p != "" {
			r.params = append(r.params, p+"=")
		}
	}
	return r
}

// Info is what Append keeps of the first token it redacts: the fields
// that let an operator tell which key signed it and when it expires.
type Info struct {
	KeyID   string // kid=, "" when absent or not decodable
	Expires string // exp= (Unix seconds, as in the token)
}

// Append appends text, redacted, to dst; it returns the extended slice and
// the Info of the first decodable token found.
//
// Redaction decides on the percent-decoded form as well, decoded again
// while escapes remain (a double-encoded value): "hmac%3D<hex>" under any
// parameter name, or a path carrier spelled "/%74/", is a token all the
// same once a server decodes it. What is written is text as received, each
// redacted span (as the decoded form places it) replaced by Elision.
func (r Redactor) Append(dst, text []byte) ([]byte, Info) {
	var info Info
	n := len(dst)
	dst = r.appendShape(dst, text, &info)
	if bytes.IndexByte(dst[n:], '%') < 0 {
		return dst, info
	}
	return r.appendDecoded(dst, n, info)
}

// appendShape appends text with every span next finds replaced by Elision.
func (r Redactor) appendShape(dst, text []byte, info *Info) []byte {
	if !r.mayHold(text) {
		return append(dst, text...)
	}
	prev := 0
	for i := 0; ; {
		start, end := r.next(text, i, info)
		if start < 0 {
			return append(dst, text[prev:]...)
		}
		dst = append(append(dst, text[prev:start]...), Elision...)
		prev, i = end, end
	}
}

// appendDecoded redacts dst[n:] (text already redacted by shape) again by
// what its decoded form holds. Text whose decoded form holds nothing to
// redact, the common case, costs a decode into a stack buffer; mapping
// spans back to the text allocates, as a token in a request may.
func (r Redactor) appendDecoded(dst []byte, n int, info Info) ([]byte, Info) {
	text := dst[n:]
	var buf [512]byte
	dec := decodeAll(append(buf[:0], text...), nil, nil)
	if len(dec) == len(text) {
		return dst, info // no escape decoded: the shape pass saw it all
	}
	var probe Info
	if start, _ := r.next(dec, 0, &probe); start < 0 {
		return dst, info
	}
	// starts[k], ends[k]: the bytes of text that decoded byte k came from.
	starts, ends := make([]int32, len(text)), make([]int32, len(text))
	for i := range text {
		starts[i], ends[i] = int32(i), int32(i+1)
	}
	dec = decodeAll(append([]byte(nil), text...), starts, ends)
	out := make([]byte, 0, len(text))
	prev := 0
	for i := 0; ; {
		start, end := r.next(dec, i, &info)
		if start < 0 {
			break
		}
		from := len(text)
		if start < len(dec) {
			from = int(starts[start])
		}
		to := from
		if end > start {
			to = int(ends[end-1])
		}
		out = append(append(out, text[prev:max(from, prev)]...), Elision...)
		prev, i = max(to, prev), end
	}
	out = append(out, text[prev:]...)
	return append(dst[:n], out...), info
}

// decodeAll percent-decodes b in place, again while a round decodes
// anything; a '%' not followed by two hex digits stays as it is. When
// starts and ends are given (len(b) each), they follow the bytes: decoded
// byte k came from the original bytes [starts[k], ends[k]).
func decodeAll(b []byte, starts, ends []int32) []byte {
	for {
		k, decoded := 0, false
		for p := 0; p < len(b); k++ {
			c, last := b[p], p
			if c == '%' && p+2 < len(b) {
				if v, ok := percent.HexPair(b[p+1], b[p+2]); ok {
					c, last, decoded = v, p+2, true
				}
			}
			b[k] = c
			if starts != nil {
				starts[k], ends[k] = starts[p], ends[last]
			}
			p = last + 1
		}
		b = b[:k]
		if !decoded {
			return b
		}
	}
}

// next finds the first span at or after from that redaction replaces,
// and fills info from the first token it finds; start is -1 when none.
//   - the path carrier "/<prefix>/<segment>": the segment;
//   - a base64url run that decodes to a token with a MAC: the run;
//   - a carrier parameter, or an hmac= field: its value.
func (r Redactor) next(text []byte, from int, info *Info) (start, end int) {
	for i := from; i < len(text); i++ {
		if r.carrier != "" && bytes.HasPrefix(text[i:], []byte(r.carrier)) {
			j := i + len(r.carrier)
			if end := j + carrierLen(text[j:]); end > j {
				if *info == (Info{}) {
					info.fill(segmentToken(string(text[j:end])))
				}
				return j, end
			}
		}
		if n := tokenRunAt(text, i); n > 0 {
			// A token's segment form outside the carrier position (another
			// prefix in a Referer, an echoed request with a mangled path).
			if *info == (Info{}) {
				info.fill(segmentToken(string(text[i : i+n])))
			}
			return i, i + n
		}
		if name := r.paramAt(text, i); name != "" {
			j := i + len(name)
			end := j + valueLen(text[j:])
			if *info == (Info{}) {
				info.fill(paramToken(string(text[j:end])))
			}
			return j, end
		}
	}
	return -1, -1
}

// String is Append into a fresh string, for cold paths.
func (r Redactor) String(text string) string {
	b, _ := r.Append(nil, []byte(text))
	return string(b)
}

// mayHold reports whether text may hold anything Append redacts: the
// carrier prefix, a '=' (parameters, hmac=), or a base64url run long
// enough to be a token. Most logged text (paths without a token, user
// agents, hosts) holds none, and is then copied as it is.
func (r Redactor) mayHold(text []byte) bool {
	if bytes.IndexByte(text, '=') >= 0 || r.carrier != "" && bytes.Contains(text, []byte(r.carrier)) {
		return true
	}
	run := 0
	for _, c := range text {
		if _, ok := base64URLVal(c); !ok {
			run = 0
		} else if run++; run >= minSegmentMACLen {
			return true
		}
	}
	return false
}

// paramAt returns the parameter name (with '=') starting at text[i], when
// it starts a parameter, or "".
//
// A carrier parameter starts after a delimiter of a query, cookie list or
// quoted string. hmac= starts after any byte but a letter or digit: a raw
// token under another parameter's name ("?h=hmac=...", decoded) is still
// one.
func (r Redactor) paramAt(text []byte, i int) string {
	rest := text[i:]
	if len(rest) >= 5 && bytes.EqualFold(rest[:5], []byte("hmac=")) && (i == 0 || !isAlnum(text[i-1])) {
		return string(rest[:5])
	}
	if i > 0 {
		switch text[i-1] {
		case '?', '&', ';', ' ', '"', '\'', '~', ',':
		default:
			return ""
		}
	}
	for _, p := range r.params {
		if bytes.HasPrefix(rest, []byte(p)) {
			return p
		}
	}
	return ""
}

// minSegmentMACLen is the shortest segment that can hold a MAC: the
// encoding of "hmac=" and 64 hex digits.
const minSegmentMACLen = ((5+hexMACLen)*8 + 5) / 6

// tokenRunAt returns the length of the base64url run starting at text[i]
// when it decodes to text holding an hmac= field, else 0. Only runs long
// enough to hold a MAC are decoded, so ordinary paths cost one scan.
func tokenRunAt(text []byte, i int) int {
	if i > 0 {
		if _, ok := base64URLVal(text[i-1]); ok {
			return 0 // inside a run: the run was judged at its start
		}
	}
	n := segmentLen(text[i:])
	if n < minSegmentMACLen || n > maxSegmentLen {
		return 0
	}
	var buf [MaxTokenLen]byte
	tok, err := ParseSegmentInto(buf[:0], string(text[i:i+n]))
	if err != nil || !bytes.Contains(bytes.ToLower(tok), []byte("hmac=")) {
		return 0
	}
	return n
}

// segmentLen is the length of the base64url run at the start of s.
func segmentLen(s []byte) int {
	for i := 0; i < len(s); i++ {
		if _, ok := base64URLVal(s[i]); !ok {
			return i
		}
	}
	return len(s)
}

// carrierLen is the length of a path carrier's segment at the start of s:
// base64url, and '%' too, so that a segment with an escape in it ("MD%41w")
// is hidden whole rather than up to the escape.
func carrierLen(s []byte) int {
	for i := 0; i < len(s); i++ {
		if _, ok := base64URLVal(s[i]); !ok && s[i] != '%' {
			return i
		}
	}
	return len(s)
}

// valueLen is the length of a parameter value at the start of s: up to
// the next delimiter of a query, cookie list, quoted string or token.
func valueLen(s []byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&', ';', '#', ' ', '"', '\'', ',', '\\', '\r', '\n', '\t':
			return i
		}
	}
	return len(s)
}

// segmentToken decodes a path carrier segment; "" when it is none.
func segmentToken(seg string) string {
	tok, err := ParseSegment(seg)
	if err != nil {
		return ""
	}
	return tok
}

// paramToken decodes a carrier parameter value: a raw token
// (percent-encoded or not) or its segment form.
func paramToken(v string) string {
	if u, err := url.QueryUnescape(v); err == nil {
		v = u
	}
	if hasMACField(v) {
		return v
	}
	return segmentToken(v)
}

// fill sets info from tok's kid= and exp= fields, once.
func (info *Info) fill(tok string) {
	if tok == "" || info.KeyID != "" || info.Expires != "" {
		return
	}
	for _, field := range strings.Split(tok, "~") {
		name, value, _ := strings.Cut(field, "=")
		switch name {
		case "kid":
			info.KeyID = printableOnly(value)
		case "exp":
			info.Expires = printableOnly(value)
		}
	}
}

// printableOnly keeps a field from a forged token from writing control
// bytes into a log; the token grammar has only visible ASCII.
func printableOnly(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	if bytes.IndexFunc([]byte(s), func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return ""
	}
	return s
}

// hasMACField reports whether s may hold an hmac= field, in any case.
func hasMACField(s string) bool {
	return strings.Contains(strings.ToLower(s), "hmac=")
}
