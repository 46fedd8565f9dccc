package token

import (
	"encoding/base64"
	"slices"
)

// maxSegmentLen is the length of the path segment of a MaxTokenLen token:
// 6 bits a digit, rounded up.
const maxSegmentLen = (MaxTokenLen*8 + 5) / 6

// PathSegment returns tok encoded as one URL path segment: base64url
// without padding (RFC 4648 §5). Its alphabet, [A-Za-z0-9_-], is
// unreserved in URLs (RFC 3986 §2.3), so the segment survives relative
// reference resolution, percent-decoding and slash merging unchanged, in
// any player, proxy or CDN.
func PathSegment(tok string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tok))
}

// ParseSegment decodes a path segment made by PathSegment.
func ParseSegment(seg string) (string, error) {
	b, err := ParseSegmentInto(nil, seg)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ParseSegmentInto appends the token decoded from seg to dst and returns
// the extended slice; it allocates only when dst lacks room. Only the
// canonical encoding is accepted: no padding, no line breaks, no other
// alphabet, no stray bits in the last digit. On error it returns dst
// unchanged and an error wrapping ErrMalformed.
func ParseSegmentInto(dst []byte, seg string) ([]byte, error) {
	if len(seg) > maxSegmentLen {
		return dst, errSegmentLong
	}
	out := slices.Grow(dst, len(seg)*6/8)
	n, err := decodeSegment(out[len(out):cap(out)], seg)
	if err != nil {
		return dst, err
	}
	return out[:len(out)+n], nil
}

// decodeSegment decodes canonical unpadded base64url seg into dst, which
// must hold len(seg)*6/8 bytes, and returns the count written.
// encoding/base64 is not used: it skips '\r' and '\n', and it needs the
// input as a []byte.
func decodeSegment(dst []byte, seg string) (int, error) {
	if seg == "" || len(seg)%4 == 1 || len(dst) < len(seg)*6/8 {
		return 0, errSegment
	}
	n := 0
	var acc uint32 // bits not yet written, the newest in the low end
	bits := 0
	for i := 0; i < len(seg); i++ {
		v, ok := base64URLVal(seg[i])
		if !ok {
			return 0, errSegment
		}
		acc = acc<<6 | uint32(v)
		bits += 6
		if bits >= 8 {
			bits -= 8
			dst[n] = byte(acc >> bits)
			n++
			acc &= 1<<bits - 1
		}
	}
	if acc != 0 { // the last digit's unused bits must be zero
		return 0, errSegment
	}
	return n, nil
}

func base64URLVal(c byte) (byte, bool) {
	switch {
	case 'A' <= c && c <= 'Z':
		return c - 'A', true
	case 'a' <= c && c <= 'z':
		return c - 'a' + 26, true
	case '0' <= c && c <= '9':
		return c - '0' + 52, true
	case c == '-':
		return 62, true
	case c == '_':
		return 63, true
	}
	return 0, false
}
