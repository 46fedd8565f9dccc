package rewrite

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
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
	// Base is the absolute URL the document was requested by (scheme,
	// host and path; its query is ignored): relative URIs resolve
	// against it (RFC 3986 §5.2).
	Base *url.URL
	// Hosts are other authorities (host or host:port, compared without
	// case) whose URIs are rewritten as Base's own are: a CDN hostname
	// serving the same paths. Any other host's URI is left alone.
	Hosts []string
	// Names are the parameter names Param writes: a URI whose query
	// already holds one of them is left alone (the packager signed it).
	Names []string
	// Param appends to dst the parameters a URI naming path (absolute,
	// percent-decoded, dot segments removed) must carry, as
	// "name=value[&name=value]" already escaped for a query, and says
	// whether it must carry any: false leaves the URI as it is (a path
	// outside the token's scope).
	Param func(dst []byte, path string) ([]byte, bool)
	// MaxOut bounds the output's length (appended to dst, so dst's
	// existing bytes count); 0 means no bound.
	MaxOut int
}

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
	res  Result
	pbuf []byte // Param's output for the URI at hand, reused
}

// appendURI appends raw, the URI as it is spelled in the document, with
// the parameters inserted when the target says so; uri is its value
// (entities decoded) and base what it resolves against.
func (r *run) appendURI(dst, raw []byte, uri string, base *url.URL, s sep) []byte {
	params, ok := r.paramsFor(uri, base)
	if !ok {
		r.res.Left++
		return append(dst, raw...)
	}
	// Insert before the fragment, after any query. In XML a '#' spelled
	// as a character reference (&#35;) is not seen: the parameters then
	// land after it, inside the fragment, which makes the URI unsigned,
	// never wider.
	cut := len(raw)
	for i := 0; i < len(raw); i++ {
		if raw[i] == '#' && (i == 0 || raw[i-1] != '&') {
			cut = i
			break
		}
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
	for i := 0; i < len(params); i++ {
		if params[i] == '&' {
			dst = append(dst, s.amp...)
		} else {
			dst = append(dst, params[i])
		}
	}
	return append(dst, raw[cut:]...)
}

// paramsFor returns the parameters for uri (in r.pbuf, valid until the
// next call), or false to leave it.
func (r *run) paramsFor(uri string, base *url.URL) ([]byte, bool) {
	t := r.t
	if uri == "" || t.Param == nil {
		return nil, false
	}
	ref, err := url.Parse(uri)
	if err != nil {
		return nil, false
	}
	for _, n := range t.Names {
		if ref.Query().Has(n) {
			return nil, false
		}
	}
	abs := base.ResolveReference(ref)
	if abs.Scheme != "http" && abs.Scheme != "https" {
		return nil, false
	}
	if !strings.EqualFold(abs.Host, t.Base.Host) && !t.listedHost(abs.Host) {
		return nil, false
	}
	p := abs.Path
	if p == "" {
		p = "/"
	}
	var ok bool
	r.pbuf, ok = t.Param(r.pbuf[:0], p)
	return r.pbuf, ok
}

func (t *Target) listedHost(h string) bool {
	for _, l := range t.Hosts {
		if strings.EqualFold(l, h) {
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
