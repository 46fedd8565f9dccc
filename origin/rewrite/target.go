package rewrite

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"unsafe"
)

// ErrTooLarge: the rewritten document would exceed Target.MaxOut bytes.
var ErrTooLarge = errors.New("rewrite: output over its size limit")

// ErrMalformed: the input is not a document of the kind asked for (an HLS
// playlist must start with #EXTM3U, RFC 8216 §4.3.1.1; a manifest must
// have its tags closed), or nests elements deeper than MaxDepth.
var ErrMalformed = errors.New("rewrite: malformed document")

// MaxDepth bounds the element nesting of a DASH manifest (an MPD nests
// five deep: MPD, Period, AdaptationSet, Representation, SegmentList).
const MaxDepth = 32

// Target says which URIs get which query parameters.
type Target struct {
	// Base is the URL the document was requested by: relative URIs
	// resolve against its scheme and path (RFC 3986 §5.2; its query is
	// ignored). Its host is never used: it came from the request, which
	// anyone can spell, so a URI naming it is not thereby ours.
	Base *url.URL
	// Hosts are the authorities (host or host:port, compared without
	// case; a host without a port also matches its scheme's default
	// port written out) whose absolute and scheme-relative URIs are
	// rewritten: the origin's own names, a CDN hostname serving the same
	// paths. Any other authority's URI is left alone; with none listed,
	// only relative references are rewritten.
	Hosts []string
	// Names are the parameter names Param writes: a URI whose query
	// already holds one of them is left alone (the packager signed it).
	Names []string
	// Param appends to dst the parameters a URI naming path (absolute,
	// percent-decoded, dot segments removed; valid only during the call)
	// must carry, as
	// "name=value[&name=value]" already escaped for a query, and says
	// whether it must carry any: false leaves the URI as it is (a path
	// outside the token's scope). kind says what the URI stands for: a
	// template's parameters reach every path a player makes of it, so
	// a credential signed for one path cannot serve it.
	Param func(dst []byte, path string, kind Kind) ([]byte, bool)
	// MaxOut bounds the output's length (appended to dst, so dst's
	// existing bytes count); 0 means no bound.
	MaxOut int
}

// Kind is what a URI in a document stands for.
type Kind uint8

const (
	// KindURI is one resource: a segment, an init section, a playlist.
	KindURI Kind = iota
	// KindKey is one resource a player needs to decrypt the media: the
	// URI of an HLS EXT-X-KEY or EXT-X-SESSION-KEY (RFC 8216 §4.3.2.4,
	// §4.3.4.5).
	KindKey
	// KindTemplate is a DASH SegmentTemplate@media or @initialization
	// (ISO/IEC 23009-1 §5.3.9.4.4): not a URI but a pattern the player
	// fills in for each segment. Param is given the path with every
	// identifier filled by "0" ($Number%05d$ becomes 0): its directory
	// is that of every path the player will make of it, but the path
	// itself is none of them.
	KindTemplate
)

// Result counts what a rewrite did with the URIs it found.
type Result struct {
	Rewritten int // URIs given the parameters
	Left      int // URIs left as they were (other host or scheme, out of scope, already signed, unparseable)
}

// sep says how a parameter separator is spelled in the document: "&" in a
// playlist, "&amp;" in XML.
type sep struct {
	amp []byte
}

var (
	hlsSep = sep{amp: []byte("&")}
	xmlSep = sep{amp: []byte("&amp;")}
)

// run is one rewrite in progress.
type run struct {
	t    *Target
	base *url.URL // t.Base without its host: the document's own base (see resolve)
	res  Result
	pbuf []byte // Param's output for the URI at hand, reused
	sbuf []byte // simplePath's scratch, reused
	// ids are the document's Representation@id values a DASH template
	// is checked with besides "0" (idsStayOurs); tooManyIDs: more than
	// maxCheckedIDs of them, and every template that names one is left.
	ids        []string
	tooManyIDs bool
}

// appendURI appends raw, the URI as it is spelled in the document, with
// the parameters inserted when the target says so; uri is its value
// (entities decoded) and base what it resolves against.
func (r *run) appendURI(dst, raw, uri []byte, base *url.URL, s sep, kind Kind) []byte {
	params, ok := r.paramsFor(uri, base, kind)
	if !ok {
		r.res.Left++
		return append(dst, raw...)
	}
	// Insert before the fragment, after any query. In XML a '#' spelled
	// as a character reference (&#35;) is not seen: the parameters then
	// land after it, inside the fragment, which makes the URI unsigned,
	// never wider.
	cut := len(raw)
	for off := 0; ; {
		i := bytes.IndexByte(raw[off:], '#')
		if i < 0 {
			break
		}
		if i += off; i == 0 || raw[i-1] != '&' {
			cut = i
			break
		}
		off = i + 1
	}
	r.res.Rewritten++
	q := bytes.IndexByte(raw[:cut], '?')
	dst = append(dst, raw[:cut]...)
	// After an existing query, always a separator: "a.ts?" becomes
	// "a.ts?&token=...", an empty parameter every query parser skips, so
	// that taking the inserted bytes out gives back the URI exactly.
	if q < 0 {
		dst = append(dst, '?')
	} else {
		dst = append(dst, s.amp...)
	}
	for len(params) > 0 {
		i := bytes.IndexByte(params, '&')
		if i < 0 {
			dst = append(dst, params...)
			break
		}
		dst = append(append(dst, params[:i]...), s.amp...)
		params = params[i+1:]
	}
	return append(dst, raw[cut:]...)
}

// paramsFor returns the parameters for uri (in r.pbuf, valid until the
// next call), or false to leave it.
func (r *run) paramsFor(uri []byte, base *url.URL, kind Kind) ([]byte, bool) {
	t := r.t
	if len(uri) == 0 || t.Param == nil || base == nil {
		return nil, false
	}
	if p, ok := r.simplePath(uri, base); ok {
		var ok bool
		r.pbuf, ok = t.Param(r.pbuf[:0], p, kind)
		return r.pbuf, ok
	}
	ref, err := url.Parse(string(uri))
	if err != nil {
		return nil, false
	}
	for _, n := range t.Names {
		if ref.Query().Has(n) {
			return nil, false
		}
	}
	abs := t.resolve(base, uri, ref)
	if abs == nil {
		return nil, false
	}
	p := abs.Path
	if p == "" {
		p = "/"
	}
	var ok bool
	r.pbuf, ok = t.Param(r.pbuf[:0], p, kind)
	return r.pbuf, ok
}

// newRun starts a rewrite with t. The document's base keeps no host:
// what resolves against it without naming an authority of its own is a
// relative reference, so its host stays empty, which no absolute or
// scheme-relative URI that resolve accepts can have (it wants a listed,
// non-empty one).
func newRun(t *Target) run {
	b := *t.Base
	b.Host, b.User, b.RawQuery, b.ForceQuery = "", nil, "", false
	return run{t: t, base: &b}
}

// resolve returns what raw (parsed as ref) resolves to against base, if
// the result is on this origin, or nil. Ours are relative references
// (path-absolute or path-relative, RFC 3986 §4.2) against a base that is
// ours, and absolute or scheme-relative URIs on HTTP or HTTPS naming a
// listed host. A nil base (a DASH BaseURL elsewhere) is not ours, and
// nothing relative to it is.
//
// Players resolve URIs as the WHATWG URL standard says, not as RFC 3986
// does: they drop tabs and newlines anywhere and spaces and controls at
// the ends, read '\' as '/', and take "///host/x" and "http:/\host/x"
// as naming host. A URI holding any of those bytes, none of which RFC
// 3986 allows, could send the token to a host the check did not see, so
// it is left alone; so is one with userinfo.
func (t *Target) resolve(base *url.URL, raw []byte, ref *url.URL) *url.URL {
	if base == nil || ref.User != nil {
		return nil
	}
	for _, c := range raw {
		if c <= ' ' || c == 0x7f || c == '\\' {
			return nil
		}
	}
	abs := base.ResolveReference(ref)
	if ref.Scheme == "" && !bytes.HasPrefix(raw, []byte("//")) {
		return abs // relative: on base's host, ours or listed
	}
	if ref.Host == "" || !t.listed(abs) {
		return nil
	}
	return abs
}

// simplePath resolves the URIs most playlists hold, a relative path of
// plain characters ("seg001.ts", "180p/index.m3u8", "../w1/seg001.m4s")
// with no query, without net/url: RFC 3986 §5.2.2-§5.2.4 make it the
// base's path up to its last '/', less one segment per leading "../",
// followed by the rest. Anything else (a scheme, an authority, an absolute
// path, a query or fragment, any other dot segment, a percent-encoding,
// climbing above the root) reports false, for net/url to resolve.
func (r *run) simplePath(uri []byte, base *url.URL) (string, bool) {
	if base.RawPath != "" {
		return "", false
	}
	dir := base.Path[:strings.LastIndexByte(base.Path, '/')+1]
	if dir == "" || dir[0] != '/' {
		return "", false
	}
	rest := uri
	for bytes.HasPrefix(rest, dotdot) {
		if len(dir) <= 1 {
			return "", false
		}
		rest = rest[3:]
		dir = dir[:strings.LastIndexByte(dir[:len(dir)-1], '/')+1]
	}
	if len(rest) == 0 {
		return "", false
	}
	prev := byte('/')
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '~', c == '$':
		case c == '.' || c == '/':
			if prev == '/' {
				return "", false // an empty segment, or one starting with '.'
			}
		default:
			return "", false // ':', '?', '#', '%' and the rest
		}
		prev = c
	}
	r.sbuf = append(append(r.sbuf[:0], dir...), rest...)
	// Valid until the next URI: Param may not keep it.
	return unsafe.String(unsafe.SliceData(r.sbuf), len(r.sbuf)), true
}

var dotdot = []byte("../")

// listed reports whether u is on HTTP or HTTPS at a listed authority.
func (t *Target) listed(u *url.URL) bool {
	var dflt string
	switch strings.ToLower(u.Scheme) {
	case "http":
		dflt = ":80"
	case "https":
		dflt = ":443"
	default:
		return false
	}
	bare := strings.TrimSuffix(u.Host, dflt)
	for _, h := range t.Hosts {
		if strings.EqualFold(h, u.Host) || strings.EqualFold(h, bare) {
			return true
		}
	}
	return false
}

// over reports whether dst has outgrown the bound.
func (t *Target) over(dst []byte) bool { return t.MaxOut > 0 && len(dst) > t.MaxOut }

// AppendQueryValue appends v percent-encoded as a query value. RFC 3986
// §3.4 lets a query hold unreserved characters, sub-delims, ':', '@' and
// '/' as they are; of the sub-delims '&' and '+' are escaped (they split
// or change a value in form decoding), and so are '$' (it opens an
// identifier in a DASH template) and '\” (it may close an XML
// attribute), so the value is safe as written in an HLS quoted-string, an
// XML attribute and a DASH template alike. '=' is kept: EdgeAuth tokens
// are name=value fields joined by '~'.
func AppendQueryValue(dst []byte, v []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range v {
		if queryKeep(c) {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

func queryKeep(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '(', ')', '*', ',', ';', '=', ':', '@', '/':
		return true
	}
	return false
}
