package token

import (
	"bytes"
	"net/url"
	"strings"
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
//   - "hmac=<value>" anywhere, in any case (a raw token) keeps the name,
//     "=…";
//   - any other base64url run that decodes to a token with a MAC (a
//     segment under another prefix, or in text that is not a URL) becomes
//     "…".
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
func (r Redactor) Append(dst, text []byte) ([]byte, Info) {
	var info Info
	if !r.mayHold(text) {
		return append(dst, text...), info
	}
	for i := 0; i < len(text); {
		if r.carrier != "" && bytes.HasPrefix(text[i:], []byte(r.carrier)) {
			j := i + len(r.carrier)
			end := j + segmentLen(text[j:])
			if end > j {
				if info == (Info{}) {
					info.fill(segmentToken(string(text[j:end])))
				}
				dst = append(append(dst, r.carrier...), Elision...)
				i = end
				continue
			}
		}
		if n := tokenRunAt(text, i); n > 0 {
			// A token's segment form outside the carrier position (another
			// prefix in a Referer, an echoed request with a mangled path).
			if info == (Info{}) {
				info.fill(segmentToken(string(text[i : i+n])))
			}
			dst = append(dst, Elision...)
			i += n
			continue
		}
		if name := r.paramAt(text, i); name != "" {
			j := i + len(name)
			end := j + valueLen(text[j:])
			if info == (Info{}) {
				info.fill(paramToken(string(text[j:end])))
			}
			dst = append(append(dst, name...), Elision...)
			i = end
			continue
		}
		dst = append(dst, text[i])
		i++
	}
	return dst, info
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
func (r Redactor) paramAt(text []byte, i int) string {
	if i > 0 {
		switch text[i-1] {
		case '?', '&', ';', ' ', '"', '\'', '~', ',':
		default:
			return ""
		}
	}
	rest := text[i:]
	for _, p := range r.params {
		if bytes.HasPrefix(rest, []byte(p)) {
			return p
		}
	}
	if len(rest) >= 5 && bytes.EqualFold(rest[:5], []byte("hmac=")) {
		return string(rest[:5])
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
