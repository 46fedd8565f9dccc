package httpmsg

import (
	"errors"
	"fmt"
)

// Errors of ScanChunked. ErrIncomplete is no fault: the body is still
// arriving.
var (
	ErrIncomplete   = errors.New("httpmsg: chunked body incomplete")
	ErrBadChunk     = errors.New("httpmsg: malformed chunked body")
	ErrBodyTooLarge = errors.New("httpmsg: request body over the limit")
)

// ScanChunked finds where a chunked request body (RFC 9112 §7.1) that
// starts at b[0] ends, and returns that length, trailer section and final
// CRLF included. It decodes nothing: an origin that serves files reads a
// request body only to get past it, and the one thing that must be right
// is where the next request starts.
//
//	chunked-body = *chunk last-chunk trailer-section CRLF
//	chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//	chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//
// It returns ErrIncomplete when b ends before the body does (whatever
// prefix of a valid body b holds, split anywhere), ErrBadChunk (wrapped,
// with the reason) for bytes the grammar does not allow, and
// ErrBodyTooLarge once the chunk data passes maxData or the encoded body
// passes maxEncoded (chunk-size lines, extensions and trailers cost room
// too: a client must not make the server buffer without bound).
//
// Hand-written rather than fasthttp's reader: that one reports a body cut
// at a segment boundary as broken (its ErrBrokenChunk does not unwrap to
// io.EOF), refuses whitespace before ";" that the grammar allows, and
// reads from a bufio.Reader, where this is a pure function that an event
// loop calls on what it has buffered.
func ScanChunked(b []byte, maxData, maxEncoded int64) (int, error) {
	n, _, err := ScanChunkedFrom(b, ChunkedProgress{}, maxData, maxEncoded)
	return n, err
}

// ChunkedProgress is how far a scan of an incomplete chunked body got:
// the chunk boundary it reached and the chunk data before it. A scan of
// the same body with more bytes may start there (ScanChunkedFrom), so a
// body that arrives a byte at a time is not read again from its start at
// every byte.
type ChunkedProgress struct {
	Off  int   // a chunk boundary: where a chunk-size line starts
	Data int64 // chunk data before Off
}

// ScanChunkedFrom is ScanChunked resumed at p, the progress an earlier
// scan of a prefix of b reported with ErrIncomplete (the zero value: from
// the start). It returns the progress to resume from next time.
func ScanChunkedFrom(b []byte, p ChunkedProgress, maxData, maxEncoded int64) (int, ChunkedProgress, error) {
	data, off := p.Data, p.Off
	for {
		if int64(off) > maxEncoded {
			return 0, p, ErrBodyTooLarge
		}
		p = ChunkedProgress{Off: off, Data: data}
		size, n, err := chunkSizeLine(b[off:])
		if err != nil {
			return 0, p, err
		}
		off += n
		if size == 0 {
			n, err := trailerSection(b[off:])
			if err != nil {
				return 0, p, err
			}
			if int64(off+n) > maxEncoded {
				return 0, p, ErrBodyTooLarge
			}
			return off + n, p, nil
		}
		data += size
		if data > maxData {
			return 0, p, ErrBodyTooLarge
		}
		// chunk-data CRLF
		if int64(len(b)-off) < size+2 {
			if int64(len(b)-off) > size && b[off+int(size)] != '\r' {
				return 0, p, fmt.Errorf("%w: chunk data not followed by CRLF", ErrBadChunk)
			}
			return 0, p, ErrIncomplete
		}
		end := off + int(size)
		if b[end] != '\r' || b[end+1] != '\n' {
			return 0, p, fmt.Errorf("%w: chunk data not followed by CRLF", ErrBadChunk)
		}
		off = end + 2
	}
}

// maxSizeDigits bounds the significant hex digits of a chunk size: 15
// keep it below 2^60. Leading zeros do not count (the grammar allows any
// number of them).
const maxSizeDigits = 15

// chunkSizeLine reads chunk-size [ chunk-ext ] CRLF from the start of b
// and returns the size and the line's length.
func chunkSizeLine(b []byte) (size int64, n int, err error) {
	i, digits := 0, 0
	for ; i < len(b); i++ {
		v, ok := hexValue(b[i])
		if !ok {
			break
		}
		if size != 0 || v != 0 {
			digits++
		}
		if digits > maxSizeDigits {
			return 0, 0, fmt.Errorf("%w: chunk size too large", ErrBadChunk)
		}
		size = size<<4 | int64(v)
	}
	if i == len(b) {
		return 0, 0, ErrIncomplete
	}
	if i == 0 {
		return 0, 0, fmt.Errorf("%w: no chunk size", ErrBadChunk)
	}
	m, err := chunkExt(b[i:])
	if err != nil {
		return 0, 0, err
	}
	return size, i + m, nil
}

// chunkExt reads *( BWS ";" BWS name [ BWS "=" BWS value ] ) CRLF.
func chunkExt(b []byte) (int, error) {
	i := 0
	for {
		i = skipBWS(b, i)
		if i == len(b) {
			return 0, ErrIncomplete
		}
		switch b[i] {
		case '\r':
			if i+1 == len(b) {
				return 0, ErrIncomplete
			}
			if b[i+1] != '\n' || (i > 0 && isBWS(b[i-1])) {
				// BWS belongs before ";" or "=", never at the end.
				return 0, fmt.Errorf("%w: chunk-size line ends badly", ErrBadChunk)
			}
			return i + 2, nil
		case ';':
		default:
			return 0, fmt.Errorf("%w: %q in a chunk-size line", ErrBadChunk, b[i])
		}
		i = skipBWS(b, i+1)
		n, err := token(b[i:])
		if err != nil {
			return 0, err
		}
		i += n
		j := skipBWS(b, i)
		if j == len(b) {
			return 0, ErrIncomplete
		}
		if b[j] != '=' {
			continue
		}
		i = skipBWS(b, j+1)
		if i == len(b) {
			return 0, ErrIncomplete
		}
		if b[i] == '"' {
			n, err = quotedString(b[i:])
		} else {
			n, err = token(b[i:])
		}
		if err != nil {
			return 0, err
		}
		i += n
	}
}

// token reads 1*tchar; a token that reaches the end of b may go on.
func token(b []byte) (int, error) {
	i := 0
	for i < len(b) && IsTchar(b[i]) {
		i++
	}
	switch {
	case i == len(b):
		return 0, ErrIncomplete
	case i == 0:
		return 0, fmt.Errorf("%w: chunk extension without a name or value", ErrBadChunk)
	}
	return i, nil
}

// quotedString reads DQUOTE *( qdtext / quoted-pair ) DQUOTE (RFC 9110
// §5.6.4).
func quotedString(b []byte) (int, error) {
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
			if i < len(b) && !isQuotedPairChar(b[i]) {
				return 0, fmt.Errorf("%w: bad quoted-pair", ErrBadChunk)
			}
		case !isQdtext(c):
			return 0, fmt.Errorf("%w: %q in a quoted string", ErrBadChunk, c)
		}
	}
	return 0, ErrIncomplete
}

// trailerSection reads *( field-line CRLF ) CRLF: each line a token, a
// colon and a value of visible characters, spaces and tabs.
func trailerSection(b []byte) (int, error) {
	off := 0
	for {
		if len(b)-off < 2 {
			if len(b) > off && b[off] != '\r' && !IsTchar(b[off]) {
				return 0, fmt.Errorf("%w: bad trailer line", ErrBadChunk)
			}
			return 0, ErrIncomplete
		}
		if b[off] == '\r' {
			if b[off+1] != '\n' {
				return 0, fmt.Errorf("%w: bad end of the trailer section", ErrBadChunk)
			}
			return off + 2, nil
		}
		n, err := fieldLine(b[off:])
		if err != nil {
			return 0, err
		}
		off += n
	}
}

// fieldLine reads field-name ":" OWS field-value OWS CRLF.
func fieldLine(b []byte) (int, error) {
	i := 0
	for i < len(b) && IsTchar(b[i]) {
		i++
	}
	if i == len(b) {
		return 0, ErrIncomplete
	}
	if i == 0 || b[i] != ':' {
		return 0, fmt.Errorf("%w: bad trailer field name", ErrBadChunk)
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '\r':
			if i+1 == len(b) {
				return 0, ErrIncomplete
			}
			if b[i+1] != '\n' {
				return 0, fmt.Errorf("%w: bare CR in a trailer", ErrBadChunk)
			}
			return i + 2, nil
		case c == '\t', c >= 0x20 && c != 0x7f:
		default:
			return 0, fmt.Errorf("%w: %q in a trailer value", ErrBadChunk, c)
		}
	}
	return 0, ErrIncomplete
}

func skipBWS(b []byte, i int) int {
	for i < len(b) && isBWS(b[i]) {
		i++
	}
	return i
}

func isBWS(c byte) bool { return c == ' ' || c == '\t' }

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// IsTchar: RFC 9110 §5.6.2, tchar = "!" / "#" / "$" / "%" / "&" / "'" /
// "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
func IsTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// isQdtext: HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text.
func isQdtext(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) || c >= 0x80
}

// isQuotedPairChar: HTAB / SP / VCHAR / obs-text.
func isQuotedPairChar(c byte) bool { return c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f) }
