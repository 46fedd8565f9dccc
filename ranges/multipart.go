package ranges

import (
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strings"
)

// Multipart frames spans of one representation as a multipart/byteranges
// body (RFC 9110 §14.6). The caller writes, for each i < Parts(),
// PartHeader(i) and then the bytes of Span(i), and finally Trailer(); that
// is exactly Len() bytes. All framing is computed by NewMultipart, so Len
// is known before the first byte is sent, and a Multipart is safe for
// concurrent reads.
type Multipart struct {
	contentType string // the response's Content-Type, boundary included
	spans       []Span // a copy of the caller's spans
	headers     []byte // every part header, back to back
	offsets     []int  // part header i is headers[offsets[i]:offsets[i+1]]
	trailer     []byte // close-delimiter
	length      int64  // exact body length
}

// NewMultipart returns the framing for sending spans, in the given order,
// of a representation of size bytes whose own Content-Type is contentType
// (empty: parts carry no Content-Type line).
//
// boundary is the caller's choice, 1 to 70 characters of RFC 2046 bchars,
// not ending in a space (NewBoundary makes one). It must not occur in the
// data; a random boundary of 30 hex digits makes that a non-concern.
//
// NewMultipart panics on a programming error: a bad boundary, a
// contentType with control characters (it would inject header lines), no
// spans, a span that is empty or outside [0, size), or a body longer than
// math.MaxInt64 bytes.
func NewMultipart(boundary, contentType string, size int64, spans []Span) *Multipart {
	if !validBoundary(boundary) {
		panic(fmt.Sprintf("ranges: invalid multipart boundary %q", boundary))
	}
	if hasCTL(contentType) {
		panic(fmt.Sprintf("ranges: control character in content type %q", contentType))
	}
	if len(spans) == 0 {
		panic("ranges: multipart with no spans") // RFC 2046 needs one body part
	}
	m := &Multipart{
		contentType: "multipart/byteranges; boundary=" + quoteBoundary(boundary),
		spans:       append([]Span(nil), spans...),
		offsets:     make([]int, 0, len(spans)+1),
		trailer:     []byte("\r\n--" + boundary + "--\r\n"),
	}
	var body int64
	for _, sp := range m.spans {
		if size < 0 || sp.Start < 0 || sp.Length <= 0 || sp.Start > size-sp.Length {
			panic(fmt.Sprintf("ranges: span %+v outside a representation of %d bytes", sp, size))
		}
		body = addLength(body, sp.Length)
	}
	m.headers = m.appendHeaders(make([]byte, 0, m.headersLen(boundary, contentType)), boundary, contentType, size)
	body = addLength(body, int64(len(m.headers)))
	m.length = addLength(body, int64(len(m.trailer)))
	return m
}

// appendHeaders appends every part header to dst, recording offsets.
//
// RFC 2046 §5.1.1: the CRLF before a boundary delimiter "is conceptually
// attached to the boundary", so every part but the first begins with
// "\r\n", and the body ends with "\r\n--B--\r\n".
func (m *Multipart) appendHeaders(dst []byte, boundary, contentType string, size int64) []byte {
	for i, sp := range m.spans {
		m.offsets = append(m.offsets, len(dst))
		if i > 0 {
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "--"...)
		dst = append(dst, boundary...)
		dst = append(dst, "\r\n"...)
		if contentType != "" {
			dst = append(dst, "Content-Type: "...)
			dst = append(dst, contentType...)
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "Content-Range: "...)
		dst = sp.appendContentRange(dst, size)
		dst = append(dst, "\r\n\r\n"...)
	}
	m.offsets = append(m.offsets, len(dst))
	return dst
}

// headersLen is an upper bound of the bytes appendHeaders writes, so the
// buffer is allocated once.
func (m *Multipart) headersLen(boundary, contentType string) int {
	per := len("\r\n--\r\nContent-Type: \r\nContent-Range: bytes -/\r\n\r\n") +
		len(boundary) + len(contentType) + 3*19
	return per * len(m.spans)
}

// addLength adds two non-negative lengths, panicking on overflow.
func addLength(a, b int64) int64 {
	if a > math.MaxInt64-b {
		panic("ranges: multipart body longer than math.MaxInt64 bytes")
	}
	return a + b
}

// ContentType returns the response's Content-Type field value:
// "multipart/byteranges; boundary=" and the boundary, quoted when it holds
// characters a token may not.
func (m *Multipart) ContentType() string { return m.contentType }

// Len returns the exact body length: every part header, every span's
// bytes and the closing delimiter. It is the response's Content-Length.
func (m *Multipart) Len() int64 { return m.length }

// Parts returns the number of parts.
func (m *Multipart) Parts() int { return len(m.spans) }

// PartHeader returns the bytes to write before the bytes of Span(i): the
// delimiter (preceded by "\r\n" when i > 0), the part's Content-Type and
// Content-Range, and the blank line. The slice is shared: do not modify it.
func (m *Multipart) PartHeader(i int) []byte {
	return m.headers[m.offsets[i]:m.offsets[i+1]:m.offsets[i+1]]
}

// Span returns the span part i carries.
func (m *Multipart) Span(i int) Span { return m.spans[i] }

// Trailer returns the bytes to write after the last span: "\r\n--B--\r\n".
// The slice is shared: do not modify it.
func (m *Multipart) Trailer() []byte { return m.trailer[:len(m.trailer):len(m.trailer)] }

// NewBoundary reads 15 bytes from r (crypto/rand.Reader in production) and
// returns them as 30 hex digits, a valid boundary.
func NewBoundary(r io.Reader) (string, error) {
	var b [15]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("ranges: reading boundary randomness: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// validBoundary applies RFC 2046 §5.1.1:
//
//	boundary := 0*69<bchars> bcharsnospace
//	bchars := bcharsnospace / " "
//	bcharsnospace := DIGIT / ALPHA / "'" / "(" / ")" /
//	                 "+" / "_" / "," / "-" / "." /
//	                 "/" / ":" / "=" / "?"
func validBoundary(b string) bool {
	if len(b) == 0 || len(b) > 70 || b[len(b)-1] == ' ' {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("'()+_,-./:=? ", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// quoteBoundary returns b as a media-type parameter value: as is when it
// is a token, else as a quoted-string. bchars hold neither '"' nor '\',
// so nothing needs escaping.
func quoteBoundary(b string) string {
	if strings.ContainsAny(b, "()/:=?, ") { // the bchars that are tspecials
		return `"` + b + `"`
	}
	return b
}

// hasCTL reports whether s holds a control character other than HTAB,
// which a field value may not (RFC 9110 §5.5).
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}
