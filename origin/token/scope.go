package token

// Scope is the set of paths a token's ACL opens, parsed once so that many
// paths can be checked against it (the URIs a playlist lists).
type Scope struct {
	acl []byte // the '!'-separated patterns; nil: the token opens no other path
}

// ParseScope returns the scope of tok. It checks neither the MAC nor the
// time: it is for a caller that has verified tok for one request and asks
// which other paths the same token opens. A token in URL form (no acl=)
// opens only the path it was verified for, which the caller knows, and
// a token that does not parse opens nothing: their Scope covers no path.
// The Scope aliases tok.
func ParseScope(tok []byte) Scope {
	if len(tok) > MaxTokenLen {
		return Scope{}
	}
	var p parsed
	if p.parse(tok) != nil {
		return Scope{}
	}
	return Scope{acl: p.acl}
}

// Covers reports whether the scope opens cleanPath (percent-decoded,
// cleaned of dot segments, as for Verifier.Verify); a path that is not
// clean is never covered.
func (s Scope) Covers(cleanPath string) bool {
	return s.acl != nil && isClean(cleanPath) && matchACL(s.acl, cleanPath)
}

// Covers reports whether the ACL of tok opens cleanPath: ParseScope(tok)
// then Scope.Covers, for one path.
func Covers(tok []byte, cleanPath string) bool { return ParseScope(tok).Covers(cleanPath) }
