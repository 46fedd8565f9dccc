package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Scope is the set of paths a token's ACL opens, parsed once so that many
// paths can be checked against it (the URIs a playlist lists), with the
// token's expiry and address binding, which a credential derived from it
// keeps.
type Scope struct {
	acl []byte // the '!'-separated patterns; nil: the token opens no other path
	exp int64  // exp=; 0 for a token that does not parse
	ip  []byte // ip=; nil when unbound
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
	return Scope{acl: p.acl, exp: p.exp, ip: p.ip}
}

// Covers reports whether the scope opens cleanPath (percent-decoded,
// cleaned of dot segments, as for Verifier.Verify); a path that is not
// clean is never covered.
func (s Scope) Covers(cleanPath string) bool {
	return s.acl != nil && isClean(cleanPath) && matchACL(s.acl, cleanPath)
}

// OpensTrees reports whether an ACL pattern holds a '*': the token opens
// more than a list of exact paths.
func (s Scope) OpensTrees() bool { return bytes.IndexByte(s.acl, '*') >= 0 }

// CoversTree reports whether the scope opens every path under dir (clean,
// ending in '/'): one of its patterns is a prefix, "P*" with no other
// '*', and dir starts with P. A pattern with '*' inside is not taken to
// cover any tree.
func (s Scope) CoversTree(dir string) bool {
	if !strings.HasSuffix(dir, "/") || !isClean(dir) {
		return false
	}
	for acl := s.acl; len(acl) > 0; {
		pattern, rest, _ := bytes.Cut(acl, []byte{'!'})
		acl = rest
		prefix, ok := bytes.CutSuffix(pattern, []byte{'*'})
		if ok && bytes.IndexByte(prefix, '*') < 0 && strings.HasPrefix(dir, string(prefix)) {
			return true
		}
	}
	return false
}

// Expiry is the token's exp=, or the zero time for a token that does not
// parse.
func (s Scope) Expiry() time.Time {
	if s.exp == 0 {
		return time.Time{}
	}
	return time.Unix(s.exp, 0)
}

// IP is the token's ip= as written, or "" when it is bound to no address.
func (s Scope) IP() string { return string(s.ip) }

// Covers reports whether the ACL of tok opens cleanPath: ParseScope(tok)
// then Scope.Covers, for one path.
func Covers(tok []byte, cleanPath string) bool { return ParseScope(tok).Covers(cleanPath) }

// SignScope returns a scope credential: a token signed with key that
// opens scope until exp, bound to ip when it is not empty. A scope ending
// in '/' opens every path under it (the ACL pattern scope+"*"), any other
// exactly that path. It is what a server hands a player for the URIs of a
// playlist or manifest that the player's own credential cannot cover (a
// DASH template, which stands for many paths; a key outside the
// playlist's directory), as nginx-secure-token's akamai tokens, whose
// default ACL is the manifest's base URI followed by '*'.
//
// scope must be clean (see Verifier.Verify) and hold no '*' (which the
// ACL would read as a wildcard), '!', '~' nor bytes outside 0x21-0x7e:
// such a path cannot be written as an exact ACL pattern, and no
// credential is made for it.
func SignScope(key Key, scope string, exp time.Time, ip string) (string, error) {
	if !isClean(scope) || strings.ContainsAny(scope, "*!") || !validValue(scope) {
		return "", fmt.Errorf("token: scope %q: want a clean path of visible ASCII without '*', '!' or '~'", scope)
	}
	pattern := scope
	if strings.HasSuffix(scope, "/") {
		pattern += "*"
	}
	return Sign(key, Claims{Expiry: exp, ACL: []string{pattern}, IP: ip, KeyID: key.ID})
}

// scopeKeyLabel is what DeriveKey keys its HMAC over: it names the use,
// so that the derived key serves nothing else.
const scopeKeyLabel = "segorigin scope credential v1"

// DeriveKey returns the key a server that holds a secret of another
// scheme (nginx secure_link's) signs its scope credentials with, named
// id: HMAC-SHA256 keyed with the secret over a fixed label. Whoever lacks
// the secret cannot compute it, and it is not the secret itself, so a
// credential of one scheme is never one of the other. An empty secret is
// an error.
func DeriveKey(id string, secret []byte) (Key, error) {
	if len(secret) == 0 {
		return Key{}, errors.New("token: derive key: empty secret")
	}
	if err := checkKeyID(id); err != nil {
		return Key{}, fmt.Errorf("token: derive key: %w", err)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(scopeKeyLabel))
	return Key{ID: id, Secret: mac.Sum(nil)}, nil
}
