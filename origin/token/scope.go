package token

// Covers reports whether the ACL of tok opens cleanPath (percent-decoded,
// cleaned of dot segments, as for Verify). It checks neither the MAC nor
// the time: it is for a caller that has verified tok for one request and
// asks which other paths the same token opens, such as the URIs a
// playlist lists. A token in URL form (no acl=) opens only the path it
// was verified for, which the caller knows: Covers reports false. A token
// that does not parse, or a path that is not clean, is never covered.
func Covers(tok []byte, cleanPath string) bool {
	if len(tok) > MaxTokenLen || !isClean(cleanPath) {
		return false
	}
	var p parsed
	if p.parse(tok) != nil || p.acl == nil {
		return false
	}
	return matchACL(p.acl, cleanPath)
}
