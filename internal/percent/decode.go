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
			hi, ok1 := unhex(src[i+1])
			lo, ok2 := unhex(src[i+2])
			if !ok1 || !ok2 {
				return dst, false
			}
			c = hi<<4 | lo
			i += 2
		}
		dst = append(dst, c)
	}
	return dst, true
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
