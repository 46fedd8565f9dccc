package percent

// Decode appends the percent-decoding of src to dst and reports whether
// src was well formed: every '%' followed by two hex digits. On false the
// returned slice holds what was decoded before the error.
func Decode(dst, src []byte) ([]byte, bool) {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '%' {
			if i+2 >= len(src) {
				return dst, false
			}
			v, ok := HexPair(src[i+1], src[i+2])
			if !ok {
				return dst, false
			}
			c = v
			i += 2
		}
		dst = append(dst, c)
	}
	return dst, true
}

// HexPair returns the byte that two hex digits of either case name, for a
// caller that decodes by its own rules (origin/token keeps a '%' that
// starts no escape).
func HexPair(hi, lo byte) (byte, bool) {
	h, ok1 := unhex(hi)
	l, ok2 := unhex(lo)
	return h<<4 | l, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
