package origin

import (
	"bytes"
	"time"

	"segorigin/cache"

	"github.com/valyala/fasthttp"
)

// condResult is the outcome of one precondition header, as in Go's
// net/http/fs.go: absent headers are condNone so the RFC's "if ... is not
// present" branches read directly.
type condResult uint8

const (
	condNone condResult = iota
	condTrue
	condFalse
)

// validators are the representation metadata preconditions are judged on.
type validators struct {
	etag    string    // strong entity tag, quoted
	modTime time.Time // Last-Modified as sent: whole seconds, never after Date
	// dateClamped: the file's mtime was later than the Date and modTime is
	// the Date instead (RFC 9110 §8.8.2.1), so it is no strong validator.
	dateClamped bool
	// lastMod is modTime as sent, formatted at the file's open (its
	// handle's LastModified); "" when modTime is the Date or not a
	// handle's, and then formatted per response.
	lastMod string
}

// fileValidators sets v's Last-Modified from h, the file whose bytes
// answer: h's modification time, or the Date where that is later
// (dateClamp).
func (d *dateClamp) fileValidators(v *validators, h *cache.Handle) {
	v.modTime, v.dateClamped = d.lastModified(h.ModTime.Truncate(time.Second))
	v.lastMod = ""
	if !v.dateClamped {
		v.lastMod = h.LastModified
	}
}

// decision is what evaluatePreconditions tells the handler to do.
type decision uint8

const (
	proceed            decision = iota // serve normally (Range may apply)
	notModified                        // 304
	preconditionFailed                 // 412
)

// evaluatePreconditions applies RFC 9110 §13.2.2 "Precedence of
// Preconditions", for GET and HEAD (the only methods that get here):
//
//  1. When If-Match is present, evaluate it: if false, respond 412.
//  2. When If-Match is not present and If-Unmodified-Since is present,
//     evaluate it: if false, respond 412.
//  3. When If-None-Match is present, evaluate it: if false, respond 304
//     for GET/HEAD.
//  4. When the method is GET or HEAD, If-None-Match is not present, and
//     If-Modified-Since is present, evaluate it: if false, respond 304.
//  5. (If-Range is step 5 and only concerns Range: see ifRange.)
func evaluatePreconditions(h *reqHeaders, v validators) decision {
	ch := checkIfMatch(h.ifMatch, v)
	if ch == condNone {
		ch = checkIfUnmodifiedSince(h.ifUnmodifiedSince, v)
	}
	if ch == condFalse {
		return preconditionFailed
	}
	switch checkIfNoneMatch(h.ifNoneMatch, v) {
	case condFalse:
		return notModified
	case condNone:
		if checkIfModifiedSince(h.ifModifiedSince, v) == condFalse {
			return notModified
		}
	}
	return proceed
}

// reqHeaders are the request header fields a file response depends on,
// found in one pass over the request's headers. A Peek per field copies
// and normalises the name and scans the list again: seven times a request,
// a sixth of the handler's time on a playlist hit.
type reqHeaders struct {
	ifMatch, ifNoneMatch, ifModifiedSince, ifUnmodifiedSince []byte
	rng, ifRange, origin                                     []byte
	cmcd                                                     [4][]byte // CMCD-Object, -Request, -Session, -Status: read for metrics, never for the answer
	acceptEncoding                                           []byte    // the first Accept-Encoding line
	acceptEncodingLines                                      int       // how many there are (gzip.go reads them all when more than one)
	badFieldName                                             bool      // a field name with a space in it
}

// scan fills r from h. fasthttp stores header names normalised (the server
// never disables it), so they compare exactly; the first of repeated fields
// wins, as with Peek, except for the entity-tag lists, whose lines are
// joined.
func (r *reqHeaders) scan(h *fasthttp.RequestHeader) {
	for k, v := range h.All() {
		var dst *[]byte
		switch string(k) {
		case "Range":
			dst = &r.rng
		case "If-Range":
			dst = &r.ifRange
		case "If-Match":
			dst = &r.ifMatch
		case "If-None-Match":
			dst = &r.ifNoneMatch
		case "If-Modified-Since":
			dst = &r.ifModifiedSince
		case "If-Unmodified-Since":
			dst = &r.ifUnmodifiedSince
		case "Origin":
			dst = &r.origin
		case "Cmcd-Object":
			dst = &r.cmcd[0]
		case "Cmcd-Request":
			dst = &r.cmcd[1]
		case "Cmcd-Session":
			dst = &r.cmcd[2]
		case "Cmcd-Status":
			dst = &r.cmcd[3]
		case "Accept-Encoding":
			r.acceptEncodingLines++
			dst = &r.acceptEncoding
		default:
			if bytes.IndexByte(k, ' ') >= 0 {
				r.badFieldName = true
			}
			continue
		}
		switch {
		case *dst == nil:
			*dst = v
		case dst == &r.ifMatch || dst == &r.ifNoneMatch:
			// RFC 9110 §5.3: a recipient MAY combine field lines of a
			// list-based field into one value, "in order, separated by a
			// comma"; the preconditions (§13.1) are judged on the whole
			// list, so a second If-None-Match line counts. Rare: only
			// then is a buffer allocated.
			*dst = append(append(append([]byte(nil), *dst...), ", "...), v...)
		}
	}
}

// checkIfMatch: RFC 9110 §13.1.1. "An origin server MUST use the strong
// comparison function when comparing entity tags for If-Match"; "*" matches
// any current representation (we only get here when the file exists).
func checkIfMatch(hv []byte, v validators) condResult {
	if len(hv) == 0 {
		return condNone
	}
	if etagListMatch(hv, v.etag, true) {
		return condTrue
	}
	return condFalse
}

// checkIfNoneMatch: RFC 9110 §13.1.2. "A recipient MUST use the weak
// comparison function when comparing entity tags for If-None-Match". The
// condition is false (304) when any tag matches.
func checkIfNoneMatch(hv []byte, v validators) condResult {
	if len(hv) == 0 {
		return condNone
	}
	if etagListMatch(hv, v.etag, false) {
		return condFalse
	}
	return condTrue
}

// checkIfUnmodifiedSince: RFC 9110 §13.1.4. "A recipient MUST ignore the
// If-Unmodified-Since header field if the received field value is not a
// valid HTTP-date". False when the representation changed after the date.
func checkIfUnmodifiedSince(hv []byte, v validators) condResult {
	if len(hv) == 0 {
		return condNone
	}
	t, err := fasthttp.ParseHTTPDate(hv)
	if err != nil {
		return condNone
	}
	if v.modTime.After(t) {
		return condFalse
	}
	return condTrue
}

// checkIfModifiedSince: RFC 9110 §13.1.3. Invalid dates are ignored; false
// (304) when the representation has not been modified since the date.
func checkIfModifiedSince(hv []byte, v validators) condResult {
	if len(hv) == 0 {
		return condNone
	}
	t, err := fasthttp.ParseHTTPDate(hv)
	if err != nil {
		return condNone
	}
	if !v.modTime.After(t) {
		return condFalse
	}
	return condTrue
}

// ifRange reports whether a Range header may be honoured, per RFC 9110
// §13.1.5: with no If-Range, yes. With an entity-tag, only on a strong match
// ("A valid entity-tag ... the condition is true if the ... entity-tag
// matches using the strong comparison function"; a weak tag never matches).
// With an HTTP-date, only when it "exactly matches the Last-Modified field
// value", and Last-Modified must itself be strong: "a recipient MUST NOT use
// an HTTP-date validator unless it is strong" (§8.8.2.2: it is strong when it
// is at least one second before the Date sent with it). now is the response
// Date.
func ifRange(hv []byte, v validators, now time.Time) bool {
	if len(hv) == 0 {
		return true
	}
	if hv[0] == '"' || bytes.HasPrefix(hv, []byte("W/")) {
		tag, rest, ok := scanETag(hv)
		return ok && len(bytes.TrimSpace(rest)) == 0 && !isWeak(tag) && string(tag) == v.etag
	}
	t, err := fasthttp.ParseHTTPDate(hv)
	if err != nil {
		return false
	}
	strongDate := !v.dateClamped && now.Sub(v.modTime) >= time.Second
	return strongDate && t.Equal(v.modTime)
}

// etagListMatch reports whether the comma-separated list hv (or "*")
// contains a tag matching etag, by strong or weak comparison (RFC 9110
// §8.8.3.2). Our own etag is always strong.
func etagListMatch(hv []byte, etag string, strong bool) bool {
	hv = bytes.TrimSpace(hv)
	if len(hv) == 1 && hv[0] == '*' {
		return true
	}
	for len(hv) > 0 {
		hv = bytes.TrimLeft(hv, " \t,")
		if len(hv) == 0 {
			break
		}
		tag, rest, ok := scanETag(hv)
		if !ok {
			return false // a malformed list matches nothing
		}
		hv = rest
		if strong && isWeak(tag) {
			continue
		}
		if string(opaque(tag)) == etag {
			return true
		}
	}
	return false
}

// scanETag reads one entity-tag (RFC 9110 §8.8.3: [W/] DQUOTE *etagc DQUOTE)
// from the start of s and returns it with what follows.
func scanETag(s []byte) (tag, rest []byte, ok bool) {
	start := 0
	if bytes.HasPrefix(s, []byte("W/")) {
		start = 2
	}
	if len(s) < start+2 || s[start] != '"' {
		return nil, s, false
	}
	for i := start + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return s[:i+1], s[i+1:], true
		case c == 0x21, c >= 0x23 && c <= 0x7e, c >= 0x80:
		default:
			return nil, s, false
		}
	}
	return nil, s, false
}

func isWeak(tag []byte) bool { return bytes.HasPrefix(tag, []byte("W/")) }

// opaque strips the weakness indicator: the weak comparison compares only the
// opaque-tags.
func opaque(tag []byte) []byte { return bytes.TrimPrefix(tag, []byte("W/")) }
