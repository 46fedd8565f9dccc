package ranges

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Span is a byte span of a representation: Length bytes from Start.
// Spans returned by Parse always have Start >= 0, Length > 0 and
// End() <= size.
type Span struct{ Start, Length int64 }

// End returns the offset just past the span (exclusive).
func (s Span) End() int64 { return s.Start + s.Length }

// ContentRange returns the Content-Range field value for s within a
// representation of size bytes, e.g. "bytes 0-499/1234". The positions are
// inclusive: "the byte positions specified are inclusive" (RFC 9110 §14.1.2).
func (s Span) ContentRange(size int64) string {
	var buf [len("bytes -/") + 3*20]byte
	return string(s.appendContentRange(buf[:0], size))
}

// appendContentRange appends the ContentRange value to dst.
func (s Span) appendContentRange(dst []byte, size int64) []byte {
	dst = append(dst, "bytes "...)
	dst = strconv.AppendInt(dst, s.Start, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, s.End()-1, 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, size, 10)
}

// UnsatisfiedContentRange returns the Content-Range field value a 416
// response carries: "bytes */1234". RFC 9110 §14.4: "A server generating a
// 416 (Range Not Satisfiable) response to a byte-range request SHOULD send a
// Content-Range header field with an unsatisfied-range value".
func UnsatisfiedContentRange(size int64) string {
	return "bytes */" + strconv.FormatInt(size, 10)
}

var (
	// ErrInvalid means the value is not a valid bytes ranges-specifier (or
	// names another unit), or its only satisfiable ranges fall on a
	// zero-length representation, which no 206 can express. The caller
	// ignores Range and answers 200.
	ErrInvalid = errors.New("ranges: invalid or unsupported Range")

	// ErrUnsatisfiable means the value is valid but none of its range-specs
	// is satisfiable. The caller answers 416 with
	// Content-Range: UnsatisfiedContentRange(size).
	ErrUnsatisfiable = errors.New("ranges: no satisfiable range")

	// ErrTooMany means the value needs more spans stored than Parse will
	// keep (8*max; repeats and overlaps merged into the span just before
	// them are not stored), or more than max spans remain after
	// coalescing. The caller ignores Range and answers 200: "A server MAY
	// ignore the Range header field" (RFC 9110 §14.2).
	ErrTooMany = errors.New("ranges: too many ranges")
)

// DefaultMaxRanges is the cap on spans after coalescing when Parse is
// given max <= 0.
const DefaultMaxRanges = 64

// rawFactor bounds the spans Parse stores for one header to rawFactor*max,
// so also the spans it sorts. A satisfiable range-spec merged at once into
// the span stored before it (appendMerged) is not stored and does not
// count, nor does an unsatisfiable or empty one: the number of range-specs
// read is bounded only by the header's length, which the server bounds.
const rawFactor = 8

// Parse parses a Range header value against a representation of size
// bytes. It returns the satisfiable spans, coalesced, in the order their
// earliest range-spec appeared, at most max of them (max <= 0 means
// DefaultMaxRanges). On error the spans are nil and the error is
// ErrInvalid, ErrUnsatisfiable or ErrTooMany. A negative size (unknown
// length) gives ErrInvalid: Range cannot apply.
//
// ErrTooMany comes as soon as more than 8*max spans are stored while
// reading, before later range-specs are looked at, or after coalescing
// when more than max spans remain. Spans merged on the spot into the one
// stored before them are not stored, so "bytes=0-0,0-0,..." of any length
// gives one span.
func Parse(header string, size int64, max int) ([]Span, error) {
	return ParseInto(nil, header, size, max)
}

// ParseInto is Parse appending the spans to dst, so a caller with a buffer
// of enough capacity parses without allocating. On error it returns dst
// unchanged (nil stays nil), though its spare capacity may have been
// written.
func ParseInto(dst []Span, header string, size int64, max int) ([]Span, error) {
	if max <= 0 {
		max = DefaultMaxRanges
	}
	set, ok := cutBytesUnit(header)
	if !ok || size < 0 {
		return dst, ErrInvalid
	}
	base := len(dst)
	out, err := appendSpans(dst, set, size, rawLimit(max))
	if err != nil {
		return dst, err // not out[:base]: a nil dst stays nil
	}
	n, err := coalesce(out[base:], max)
	if err != nil {
		return dst, err
	}
	return out[:base+n], nil
}

// rawLimit is rawFactor*max without overflowing.
func rawLimit(max int) int {
	if max > math.MaxInt/rawFactor {
		return math.MaxInt
	}
	return rawFactor * max
}

// cutBytesUnit checks that header is "bytes=" followed by a range-set and
// returns the range-set. The field value proper excludes leading and
// trailing whitespace (RFC 9110 §5.5), so both are trimmed. None may come
// before "="; the OWS erratum 7306 allows after it is the list's, trimmed
// with each element.
func cutBytesUnit(header string) (set string, ok bool) {
	const unit = "bytes="
	header = trimOWS(header)
	if len(header) < len(unit) || !strings.EqualFold(header[:len(unit)], unit) {
		return "", false
	}
	return header[len(unit):], true
}

// verdict is what one range-spec means against a size.
type verdict uint8

const (
	invalid       verdict = iota // malformed: the whole value is invalid
	unsatisfiable                // valid, dropped
	satisfiable                  // valid, contributes a span
	emptyOnly                    // satisfiable, but the representation is empty
)

// appendSpans reads the comma-separated range-set, appending one span per
// satisfiable range-spec in the order they appear, save those merged into
// the span appended just before (appendMerged). It stops with ErrTooMany
// once more than limit spans have been appended.
func appendSpans(dst []Span, set string, size int64, limit int) ([]Span, error) {
	specs, satisfied, stored, empty := 0, 0, 0, false
	for more := true; more; {
		var elem string
		elem, set, more = strings.Cut(set, ",")
		elem = trimOWS(elem)
		if elem == "" {
			continue // "ignore a reasonable number of empty list elements"
		}
		specs++
		span, v := parseSpec(elem, size)
		switch v {
		case invalid:
			return dst, ErrInvalid
		case emptyOnly:
			empty = true
		case satisfiable:
			n := len(dst)
			dst = appendMerged(dst, span, satisfied > 0)
			satisfied++
			// Only spans kept in memory count toward the limit: a
			// repeat merged into its predecessor costs nothing, so
			// 2000 copies of 0-0 stay one span, not ErrTooMany. The
			// loop itself is bounded by the header's length.
			if len(dst) > n {
				if stored++; stored > limit {
					return dst, ErrTooMany
				}
			}
		}
	}
	switch {
	case specs == 0: // range-set = 1#range-spec
		return dst, ErrInvalid
	case satisfied > 0:
		return dst, nil
	case empty:
		return dst, ErrInvalid // see doc.go: satisfiable, but no 206 can say so
	default:
		return dst, ErrUnsatisfiable
	}
}

// appendMerged appends span to dst, or merges it into the last span when
// the two overlap or touch (hasLast: dst ends with a span of this header).
// The merged span keeps the earlier position, as coalesce would give it, so
// repeats and the overlapping runs of "Apache Killer" headers
// (CVE-2011-3192: "bytes=0-,5-6,5-7,...") cost no storage.
func appendMerged(dst []Span, span Span, hasLast bool) []Span {
	if hasLast {
		last := &dst[len(dst)-1]
		if last.Start <= span.End() && span.Start <= last.End() {
			start := min(last.Start, span.Start)
			*last = Span{Start: start, Length: max(last.End(), span.End()) - start}
			return dst
		}
	}
	return append(dst, span)
}

// parseSpec resolves one non-empty range-spec against size.
func parseSpec(spec string, size int64) (Span, verdict) {
	firstStr, lastStr, ok := strings.Cut(spec, "-")
	if !ok {
		return Span{}, invalid
	}
	if firstStr == "" {
		return suffixSpan(lastStr, size)
	}
	first, firstOver, ok := parseDigits(firstStr)
	if !ok {
		return Span{}, invalid
	}
	last := int64(math.MaxInt64) // "first-pos -": through the end
	if lastStr != "" {
		l, lastOver, ok := parseDigits(lastStr)
		if !ok {
			return Span{}, invalid
		}
		// Saturated values compare equal; compare the numerals then.
		if firstOver || lastOver {
			if lessDecimal(lastStr, firstStr) {
				return Span{}, invalid
			}
		} else if l < first {
			return Span{}, invalid
		}
		last = l
	}
	if first >= size {
		return Span{}, unsatisfiable
	}
	// "If the last-pos value is absent, or if the value is greater than or
	// equal to the current length of the representation data, the byte
	// range is interpreted as the remainder of the representation".
	last = min(last, size-1)
	return Span{Start: first, Length: last - first + 1}, satisfiable
}

// suffixSpan resolves "-suffix-length".
func suffixSpan(digits string, size int64) (Span, verdict) {
	n, _, ok := parseDigits(digits)
	switch {
	case !ok:
		return Span{}, invalid
	case n == 0: // satisfiable only "with a non-zero suffix-length"
		return Span{}, unsatisfiable
	case size == 0:
		return Span{}, emptyOnly
	}
	// "If the selected representation is shorter than the specified
	// suffix-length, the entire representation is used."
	n = min(n, size)
	return Span{Start: size - n, Length: n}, satisfiable
}

// parseDigits parses 1*DIGIT, saturating at math.MaxInt64 (over reports
// that it did) instead of failing, so that no numeral is an error merely
// for its length.
func parseDigits(s string) (n int64, over, ok bool) {
	if s == "" {
		return 0, false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false, false
		}
		d := int64(c - '0')
		if over || n > (math.MaxInt64-d)/10 {
			n, over = math.MaxInt64, true
			continue
		}
		n = n*10 + d
	}
	return n, over, true
}

// lessDecimal reports whether numeral a < numeral b, for strings of
// digits of any length.
func lessDecimal(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// trimOWS removes optional whitespace (SP, HTAB; RFC 9110 §5.6.3) from
// both ends of s.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
