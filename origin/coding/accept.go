package coding

// Gzip reports whether a request whose Accept-Encoding field lines are
// lines accepts the gzip coding, and prefers it to identity (RFC 9110
// §12.5.3). No line at all is identity (see the package comment).
func Gzip(lines [][]byte) bool {
	var l list
	for _, line := range lines {
		l.read(line)
	}
	q := l.gzip
	if !l.gzipNamed {
		if !l.starNamed {
			return false
		}
		q = l.star // "*" matches any coding not named (§12.5.3)
	}
	if q <= 0 {
		return false // "qvalue of 0 means not acceptable" (§12.4.2)
	}
	// identity is acceptable unless excluded; it is preferred only when
	// the client weighs it above gzip.
	return !l.identityNamed || l.identity <= q
}

// list is what Gzip learns of the field: the weight (in thousandths) of
// gzip, identity and "*", and whether each is named.
type list struct {
	gzip, identity, star                int
	gzipNamed, identityNamed, starNamed bool
}

// read adds one field line's elements to l. A coding named twice keeps
// its highest weight.
func (l *list) read(line []byte) {
	for len(line) > 0 {
		var elem []byte
		elem, line = cut(line, ',')
		name, params := cut(elem, ';')
		name = trim(name)
		if len(name) == 0 {
			continue // empty list elements are allowed (RFC 9110 §5.6.1)
		}
		q, ok := weight(params)
		if !ok {
			continue
		}
		switch {
		case equalFold(name, "gzip"), equalFold(name, "x-gzip"):
			l.gzip, l.gzipNamed = max(l.gzip, q), true
		case equalFold(name, "identity"):
			l.identity, l.identityNamed = max(l.identity, q), true
		case len(name) == 1 && name[0] == '*':
			l.star, l.starNamed = max(l.star, q), true
		}
	}
}

// weight reads the parameters after a coding (";q=0.5"): the weight in
// thousandths, 1000 when there is none, and false when a q parameter does
// not parse as RFC 9110 §12.4.2's qvalue. Other parameters are ignored.
func weight(params []byte) (int, bool) {
	q := 1000
	for len(params) > 0 {
		var p []byte
		p, params = cut(params, ';')
		k, v := cut(p, '=')
		if !equalFold(trim(k), "q") {
			continue
		}
		var ok bool
		if q, ok = qvalue(trim(v)); !ok {
			return 0, false
		}
	}
	return q, true
}

// qvalue parses ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) into
// thousandths.
func qvalue(v []byte) (int, bool) {
	if len(v) == 0 || len(v) > 5 || (v[0] != '0' && v[0] != '1') {
		return 0, false
	}
	q := int(v[0]-'0') * 1000
	if len(v) == 1 {
		return q, true
	}
	if v[1] != '.' {
		return 0, false
	}
	scale := 100
	for _, c := range v[2:] {
		if c < '0' || c > '9' || (q == 1000 && c != '0') {
			return 0, false
		}
		q += int(c-'0') * scale
		scale /= 10
	}
	return q, true
}

// cut splits s around the first sep, like bytes.Cut without the found
// flag: the rest is empty when there is no sep.
func cut(s []byte, sep byte) (before, after []byte) {
	for i, c := range s {
		if c == sep {
			return s[:i], s[i+1:]
		}
	}
	return s, nil
}

// trim drops optional whitespace (SP and HTAB, RFC 9110 §5.6.3) at both
// ends.
func trim(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// equalFold compares s with the lower-case ASCII word without regard to
// case, without allocating (bytes.EqualFold also folds Unicode, which
// field tokens never hold).
func equalFold(s []byte, word string) bool {
	if len(s) != len(word) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}
