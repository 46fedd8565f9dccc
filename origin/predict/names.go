package predict

import (
	"net/url"
	"path"
	"strings"
)

// Entry is one object a player fetches: a file, or a byte span of it.
type Entry struct {
	Name string // clean path relative to the media root
	Off  int64  // first byte
	Len  int64  // bytes; -1: to the end of the file
}

// Resolve resolves ref (a URI reference from a playlist or a CMCD nor key)
// against base, the clean relative name of the object that carried it, and
// returns a clean relative name, or false when ref names another host or
// leaves the root. Query and fragment are dropped: files are addressed by
// path alone.
func Resolve(base, ref string) (string, bool) {
	if ref == "" || strings.ContainsAny(ref, "\x00\r\n") || strings.ContainsAny(base, "\x00\r\n") {
		return "", false
	}
	u, err := url.Parse(ref)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return "", false
	}
	p := u.Path // percent-decoded: "%00" is a NUL here
	if p == "" || strings.ContainsAny(p, "\x00\r\n") {
		return "", false
	}
	var full string
	if strings.HasPrefix(p, "/") {
		full = p
	} else {
		full = "/" + path.Join(path.Dir(base), p)
	}
	// Clean with a leading "/" so ".." can never climb above the root,
	// then check that nothing tried to: a reference that climbs is not
	// one the origin would serve under that name.
	if climbs(full) {
		return "", false
	}
	name := strings.TrimPrefix(path.Clean(full), "/")
	if name == "" || name == "." {
		return "", false
	}
	return name, true
}

// climbs reports whether a slash path has more ".." segments than
// segments before them at any point.
func climbs(p string) bool {
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// MaxDigits is the longest run of digits NextNumber counts up: nineteen
// nines would not fit an int64, and no packager numbers past that.
const MaxDigits = 18

// NextNumber returns the name of the segment after name in a DASH
// SegmentTemplate ($Number$ or $Number%0Nd$) or numbered HLS series: the
// last run of decimal digits in the file name (not its directory or
// extension) plus
// one, keeping its zero padding ("chunk-0-009.m4s" → "chunk-0-010.m4s").
// Initialization segments (a name containing "init") have no next.
func NextNumber(name string) (string, bool) {
	var buf [128]byte
	b, ok := AppendNextNumber(buf[:0], name)
	if !ok {
		return "", false
	}
	return string(b), true
}

// AppendNextNumber is NextNumber appending to dst: the server asks it for
// every whole segment it sends, and most answers are already known, so
// the name is built in the caller's scratch and only copied when kept.
func AppendNextNumber(dst []byte, name string) ([]byte, bool) {
	dir, file := path.Split(name)
	if containsFold(file, "init") {
		return dst, false
	}
	ext := path.Ext(file) // ".m4s" has a digit that is not the number
	file = file[:len(file)-len(ext)]
	end := strings.LastIndexAny(file, "0123456789")
	if end < 0 {
		return dst, false
	}
	start := end
	for start > 0 && file[start-1] >= '0' && file[start-1] <= '9' {
		start--
	}
	if end+1-start > MaxDigits {
		return dst, false
	}
	dst = append(dst, dir...)
	dst = append(dst, file[:start]...)
	d := len(dst)
	dst = append(dst, file[start:end+1]...)
	i := len(dst) - 1
	for ; i >= d && dst[i] == '9'; i-- {
		dst[i] = '0'
	}
	if i < d {
		dst = append(dst, 0)
		copy(dst[d+1:], dst[d:])
		dst[d] = '1'
	} else {
		dst[i]++
	}
	dst = append(dst, file[end+1:]...)
	return append(dst, ext...), true
}

// containsFold reports whether s contains the lower-case ASCII sub in any
// case, without the allocation of strings.ToLower.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
