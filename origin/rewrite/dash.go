package rewrite

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
)

// uriAttrs are the attributes, by element local name, whose value is a
// URI (ISO/IEC 23009-1 §5.3.9: SegmentBase, SegmentList, SegmentTemplate).
var uriAttrs = map[string][]string{
	"SegmentTemplate":     {"media", "initialization"},
	"SegmentURL":          {"media"},
	"Initialization":      {"sourceURL"},
	"RepresentationIndex": {"sourceURL"},
}

// DASH appends to dst the manifest src with t's parameters in every URI
// it lists: BaseURL text and the attributes of uriAttrs, each resolved
// against the BaseURL chain of its element (§5.6: a BaseURL applies to
// its parent element and everything inside it). A tag that is not closed,
// or nesting deeper than MaxDepth, is ErrMalformed; a result longer than
// t.MaxOut is ErrTooLarge. On an error dst must not be served.
func DASH(dst, src []byte, t *Target) ([]byte, Result, error) {
	r := newRun(t)
	r.ids, r.tooManyIDs = representationIDs(src)
	// bases[d] is the base URL inside the open element at depth d;
	// bases[0] is the document's. An element inherits its parent's.
	bases := make([]*url.URL, 1, 8)
	bases[0] = r.base
	for len(src) > 0 {
		lt := bytes.IndexByte(src, '<')
		if lt < 0 {
			return append(dst, src...), r.res, nil
		}
		dst = append(dst, src[:lt]...)
		src = src[lt:]
		n, err := r.markup(&dst, src, &bases)
		if err != nil {
			return dst, r.res, err
		}
		src = src[n:]
		if t.over(dst) {
			return dst, r.res, ErrTooLarge
		}
	}
	return dst, r.res, nil
}

// markups that are copied whole, by how they open and close.
var skipped = []struct{ open, close string }{
	{"<!--", "-->"}, {"<![CDATA[", "]]>"}, {"<?", "?>"}, {"<!", ">"},
}

// markup appends the markup at the start of src (a '<'), rewritten, and
// returns how many bytes of src it took.
func (r *run) markup(dst *[]byte, src []byte, bases *[]*url.URL) (int, error) {
	for _, s := range skipped {
		if bytes.HasPrefix(src, []byte(s.open)) {
			end := bytes.Index(src[len(s.open):], []byte(s.close))
			if end < 0 {
				return 0, ErrMalformed
			}
			n := len(s.open) + end + len(s.close)
			*dst = append(*dst, src[:n]...)
			return n, nil
		}
	}
	if bytes.HasPrefix(src, []byte("</")) {
		gt := bytes.IndexByte(src, '>')
		if gt < 0 {
			return 0, ErrMalformed
		}
		if len(*bases) > 1 {
			*bases = (*bases)[:len(*bases)-1]
		}
		*dst = append(*dst, src[:gt+1]...)
		return gt + 1, nil
	}
	n, name, selfClosing, err := r.startTag(dst, src, (*bases)[len(*bases)-1])
	if err != nil {
		return 0, err
	}
	if selfClosing {
		return n, nil
	}
	if name == "BaseURL" {
		// Its text, up to the next markup, is the URI.
		m, err := r.baseURL(dst, src[n:], bases)
		return n + m, err
	}
	if len(*bases) > MaxDepth {
		return 0, ErrMalformed
	}
	*bases = append(*bases, (*bases)[len(*bases)-1])
	return n, nil
}

// startTag appends a start tag with its URI attributes rewritten against
// base, and returns its length, local name and whether it closed itself.
func (r *run) startTag(dst *[]byte, src []byte, base *url.URL) (n int, local string, selfClosing bool, err error) {
	i := 1
	for i < len(src) && !isSpace(src[i]) && src[i] != '/' && src[i] != '>' {
		i++
	}
	qname := string(src[1:i])
	local = qname[strings.LastIndexByte(qname, ':')+1:]
	attrs := uriAttrs[local]
	*dst = append(*dst, src[:i]...)
	for {
		j, attr, v0, v1, err := scanAttr(src, i)
		switch {
		case err != nil:
			return 0, "", false, err
		case attr == "" && src[j] == '>':
			*dst = append(*dst, src[i:j+1]...)
			return j + 1, local, false, nil
		case attr == "": // "/>"
			*dst = append(*dst, src[i:j+2]...)
			return j + 2, local, true, nil
		}
		value := src[v0:v1]
		*dst = append(*dst, src[i:v0]...)
		switch {
		case !isURIAttr(attrs, attr):
			*dst = append(*dst, value...)
		case local != "SegmentTemplate":
			*dst = r.appendURI(*dst, value, unescapeXML(value), base, xmlSep, KindURI)
		case !r.idsStayOurs(string(unescapeXML(value)), base):
			r.res.Left++
			*dst = append(*dst, value...)
		default:
			uri := []byte(fillTemplate(string(unescapeXML(value)), "0"))
			*dst = r.appendURI(*dst, value, uri, base, xmlSep, KindTemplate)
		}
		*dst = append(*dst, src[v1])
		i = v1 + 1
	}
}

// scanAttr reads, from src[i] on, any space and then one attribute: name
// S? '=' S? quoted value, the value being src[v0:v1] and its closing
// quote src[v1]. Where the tag ends instead (">" or "/>" at src[j]) attr
// is empty; anything else is ErrMalformed.
func scanAttr(src []byte, i int) (j int, attr string, v0, v1 int, err error) {
	j = i
	for j < len(src) && isSpace(src[j]) {
		j++
	}
	if j >= len(src) {
		return 0, "", 0, 0, ErrMalformed
	}
	if src[j] == '>' || src[j] == '/' && j+1 < len(src) && src[j+1] == '>' {
		return j, "", 0, 0, nil
	}
	k := j
	for k < len(src) && !isSpace(src[k]) && src[k] != '=' && src[k] != '>' && src[k] != '/' {
		k++
	}
	attr = string(src[j:k])
	for k < len(src) && isSpace(src[k]) {
		k++
	}
	if k >= len(src) || src[k] != '=' || attr == "" {
		return 0, "", 0, 0, ErrMalformed
	}
	k++
	for k < len(src) && isSpace(src[k]) {
		k++
	}
	if k >= len(src) || (src[k] != '"' && src[k] != '\'') {
		return 0, "", 0, 0, ErrMalformed
	}
	end := bytes.IndexByte(src[k+1:], src[k])
	if end < 0 {
		return 0, "", 0, 0, ErrMalformed
	}
	return j, attr, k + 1, k + 1 + end, nil
}

func isURIAttr(attrs []string, name string) bool {
	for _, a := range attrs {
		if a == name {
			return true
		}
	}
	return false
}

// baseURL appends a BaseURL element's text rewritten and sets the base of
// the enclosing element (the top of bases) to it: the BaseURL element
// itself pushes nothing, and its end tag pops nothing.
func (r *run) baseURL(dst *[]byte, src []byte, bases *[]*url.URL) (int, error) {
	lt := bytes.IndexByte(src, '<')
	if lt < 0 {
		return 0, ErrMalformed
	}
	text := src[:lt]
	lead := len(text) - len(bytes.TrimLeft(text, " \t\r\n"))
	uri := bytes.TrimRight(text[lead:], " \t\r\n")
	top := len(*bases) - 1
	inherited := (*bases)[max(top-1, 0)]
	value := unescapeXML(uri)
	// Several BaseURLs in one element are alternatives; players start
	// with the first, so the first is the base of what follows. One not
	// on this origin, or unreadable, makes the base nil: nothing below
	// it is ours.
	if len(uri) > 0 && (*bases)[top] == inherited {
		var abs *url.URL
		if ref, err := url.Parse(string(value)); err == nil {
			abs = r.t.resolve(inherited, value, ref)
		}
		(*bases)[top] = abs
	}
	*dst = append(*dst, text[:lead]...)
	if len(uri) > 0 {
		*dst = r.appendURI(*dst, uri, value, inherited, xmlSep, KindURI)
	}
	*dst = append(*dst, text[lead+len(uri):]...)
	// The end tag (or whatever markup follows) must not pop the parent.
	if bytes.HasPrefix(src[lt:], []byte("</")) {
		gt := bytes.IndexByte(src[lt:], '>')
		if gt < 0 {
			return 0, ErrMalformed
		}
		*dst = append(*dst, src[lt:lt+gt+1]...)
		return lt + gt + 1, nil
	}
	return 0, ErrMalformed
}

// fillTemplate replaces each template identifier ($Number%05d$,
// $Time$, ...; §5.3.9.4.4) by "0", $RepresentationID$ by repID, and "$$"
// by "$": what is resolved and checked against the token's scope is then
// a path like those the player will ask for, and a format tag such as
// %05d is not mistaken for a percent-encoded byte.
func fillTemplate(s, repID string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i+1:], '$')
		if j < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		switch id := s[i+1 : i+1+j]; {
		case j == 0:
			b.WriteByte('$')
		case id == "RepresentationID":
			b.WriteString(repID)
		default:
			b.WriteByte('0')
		}
		s = s[i+1+j+1:]
	}
}

// maxCheckedIDs bounds the Representation@id values a template is
// checked with (idsStayOurs).
const maxCheckedIDs = 32

// representationIDs are the distinct Representation@id values of src
// that are more than URI-unreserved characters (RFC 3986 §2.3): every
// identifier of a template but $RepresentationID$ is a number, that one
// is put in by the player as it is written, and an id such as
// "//cdn.example", "\\cdn.example" (a URL parser takes the backslash
// for a slash) or "x:" makes the template's URIs another host's or
// scheme's. tooMany: more than maxCheckedIDs of them. It reads tags as
// startTag does; malformed markup ends the scan, which DASH then refuses.
func representationIDs(src []byte) (ids []string, tooMany bool) {
	for {
		lt := bytes.IndexByte(src, '<')
		if lt < 0 {
			return ids, false
		}
		src = src[lt+1:]
		n := 0
		for n < len(src) && !isSpace(src[n]) && src[n] != '/' && src[n] != '>' {
			n++
		}
		name := src[:n]
		name = name[bytes.LastIndexByte(name, ':')+1:]
		src = src[n:]
		if string(name) != "Representation" {
			continue
		}
		for {
			_, attr, v0, v1, err := scanAttr(src, 0)
			if err != nil || attr == "" {
				break
			}
			value := src[v0:v1]
			src = src[v1+1:]
			id := string(unescapeXML(value))
			if attr != "id" || unreserved(id) || slices.Contains(ids, id) {
				continue
			}
			if len(ids) == maxCheckedIDs {
				return ids, true
			}
			ids = append(ids, id)
		}
	}
}

// unreserved: s is only RFC 3986's unreserved characters.
func unreserved(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// idsStayOurs: the template tmpl, filled with each id of r.ids for
// $RepresentationID$, still resolves against base on this origin and in
// the target's scope, as it does filled with "0"; false where a
// Representation's id would take the player's requests elsewhere, or
// there were too many ids to check.
func (r *run) idsStayOurs(tmpl string, base *url.URL) bool {
	if !strings.Contains(tmpl, "$RepresentationID$") {
		return true
	}
	if r.tooManyIDs {
		return false
	}
	for _, id := range r.ids {
		if _, ok := r.paramsFor([]byte(fillTemplate(tmpl, id)), base, KindTemplate); !ok {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// unescapeXML decodes the predefined entities and character references
// (XML 1.0 §4.6, §4.1) of an attribute value or text; anything it does
// not know is kept as written.
func unescapeXML(b []byte) []byte {
	if bytes.IndexByte(b, '&') < 0 {
		return b
	}
	var out strings.Builder
	for len(b) > 0 {
		amp := bytes.IndexByte(b, '&')
		if amp < 0 {
			out.Write(b)
			break
		}
		out.Write(b[:amp])
		b = b[amp:]
		semi := bytes.IndexByte(b, ';')
		if semi < 0 {
			out.Write(b)
			break
		}
		if c, ok := entity(string(b[1:semi])); ok {
			out.WriteString(c)
		} else {
			out.Write(b[:semi+1])
		}
		b = b[semi+1:]
	}
	return []byte(out.String())
}

func entity(name string) (string, bool) {
	switch name {
	case "amp":
		return "&", true
	case "lt":
		return "<", true
	case "gt":
		return ">", true
	case "quot":
		return `"`, true
	case "apos":
		return "'", true
	}
	if rest, ok := strings.CutPrefix(name, "#"); ok && rest != "" {
		var v rune
		hex := rest[0] == 'x'
		if hex {
			rest = rest[1:]
		}
		for _, c := range rest {
			d := rune(-1)
			switch {
			case '0' <= c && c <= '9':
				d = c - '0'
			case hex && 'a' <= c && c <= 'f':
				d = c - 'a' + 10
			case hex && 'A' <= c && c <= 'F':
				d = c - 'A' + 10
			}
			if d < 0 || v > 0x10FFFF {
				return "", false
			}
			if hex {
				v = v*16 + d
			} else {
				v = v*10 + d
			}
		}
		if rest != "" && v <= 0x10FFFF {
			return string(v), true
		}
	}
	return "", false
}
