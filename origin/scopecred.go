package origin

import (
	"path"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/origin/rewrite"
	"segorigin/origin/token"
)

// Scope credentials: what a rewritten playlist or manifest hands a player
// where the player's own credential cannot serve. A DASH SegmentTemplate
// is no URI but a pattern the player fills in for each segment, so a
// credential signed for one URI (a secure_link md5=, an exact-path
// token) cannot be written into it; nginx-secure-token answers that by
// writing an Akamai token whose ACL is the manifest's base URI and '*'.
// segorigin does the same with its own token format: a token whose ACL is
// the document's directory (-auth-rewrite-scope levels up), valid until
// the request's own credential expires and bound to the same address.

// maxRewriteScope bounds -auth-rewrite-scope: deeper than any media tree.
const maxRewriteScope = 8

// scopeKeyID names the key secure_link scope credentials are signed with
// (their kid=).
const scopeKeyID = "segorigin-scope"

// unboundScopeLife is how long a scope credential made for a secure_link
// without expiry lasts, counted from the start of the hour (so the
// rewritten body, and its ETag, change once an hour, not every second).
const unboundScopeLife = 25 * time.Hour

// scopeSigner signs scope credentials, and under secure_link checks them.
type scopeSigner struct {
	param string    // the query parameter they travel in (-auth-query-param); "": none are made
	key   token.Key // EdgeAuth keys: the key file's first; secure_link: derived from its secret
	ok    bool      // key is set
	// check verifies scope credentials under secure_link, whose
	// verifier knows only links; nil with EdgeAuth keys, whose verifier
	// checks them as any token.
	check *token.Verifier
	up    int // -auth-rewrite-scope
}

// newScopeSigner picks the key of the scheme in force in cfg.
func newScopeSigner(cfg *AuthConfig) (scopeSigner, error) {
	s := scopeSigner{param: cfg.QueryParam, up: cfg.RewriteScope}
	switch {
	case cfg.SecureLinkSecret != "":
		k, err := token.DeriveKey(scopeKeyID, []byte(cfg.SecureLinkSecret))
		if err != nil {
			return s, err
		}
		ring, err := token.NewKeyring(k)
		if err != nil {
			return s, err
		}
		if s.check, err = token.NewVerifier(token.VerifierConfig{Keys: ring, Skew: cfg.Skew}); err != nil {
			return s, err
		}
		s.key, s.ok = k, true
	case cfg.Keys != nil && cfg.Keys.Len() > 0:
		s.key, s.ok = cfg.Keys.Key(cfg.Keys.IDs()[0])
	}
	return s, nil
}

// fromQuery returns the scope credential a secure_link request carries
// in the query, or nil.
func (s *scopeSigner) fromQuery(ctx *fasthttp.RequestCtx) []byte {
	if s.check == nil || s.param == "" {
		return nil
	}
	if v := ctx.QueryArgs().Peek(s.param); len(v) > 0 {
		return v
	}
	return nil
}

// verify checks a scope credential under secure_link: it opens only what
// a link could (the location), and only what its ACL says.
func (s *scopeSigner) verify(link *token.SecureLinkVerifier, tok []byte, path, ip string, now time.Time) (time.Time, error) {
	if !link.InLocation(path) {
		return time.Time{}, token.ErrScope
	}
	return s.check.VerifyBytesUntil(tok, path, ip, now)
}

// docScope is the scope credential of one document.
type docScope struct {
	s     *scopeSigner
	dir   string    // the scope: every path under it
	param []byte    // "token=<credential>", escaped for a query; nil: none could be made
	exp   time.Time // the credential's expiry
	ip    string    // the address it is bound to; "" for none
}

// forDocument makes the scope credential of the document name (cleaned,
// no leading slash) for a request whose own credential expires at exp
// (zero: it does not) and binds ip ("" for none). within, when not nil,
// says which directories the request's own credential opens whole: the
// scope then climbs only that far, so a scope credential, presented for
// a document in turn, never yields a wider one.
func (s *scopeSigner) forDocument(name string, exp time.Time, ip string, now time.Time, within func(dir string) bool) docScope {
	d := docScope{s: s, dir: scopeDir(name, s.up, within), ip: ip, exp: exp}
	if d.exp.IsZero() {
		d.exp = now.Truncate(time.Hour).Add(unboundScopeLife)
	}
	if !s.ok || s.param == "" || d.dir == "" {
		return d
	}
	tok, err := token.SignScope(s.key, d.dir, d.exp, ip)
	if err != nil {
		return d // a directory the ACL cannot spell: its URIs get none
	}
	d.param = rewrite.AppendQueryValue(append([]byte(s.param), '='), []byte(tok))
	return d
}

// scopeDir is the directory of name, up levels higher (never above "/"),
// ending in '/', and no higher than within allows (nil: no bound); ""
// when within refuses name's own directory.
func scopeDir(name string, up int, within func(dir string) bool) string {
	slash := func(d string) string {
		if d == "/" {
			return d
		}
		return d + "/"
	}
	dir := path.Dir("/" + name)
	if within != nil && !within(slash(dir)) {
		return ""
	}
	for i := 0; i < up && dir != "/"; i++ {
		parent := path.Dir(dir)
		if within != nil && !within(slash(parent)) {
			break
		}
		dir = parent
	}
	return slash(dir)
}

// covers reports whether the scope credential opens p.
func (d *docScope) covers(p string) bool {
	return d.param != nil && d.dir != "" && strings.HasPrefix(p, d.dir)
}

// appendScope appends the scope credential for p, if it opens p.
func (d *docScope) appendScope(dst []byte, p string) ([]byte, bool) {
	if !d.covers(p) {
		return dst, false
	}
	return append(dst, d.param...), true
}

// appendExact appends a credential for p alone (a key outside the
// scope), with the scope credential's expiry and address.
func (d *docScope) appendExact(dst []byte, p string) ([]byte, bool) {
	if !d.s.ok || d.s.param == "" || strings.HasSuffix(p, "/") {
		return dst, false
	}
	tok, err := token.SignScope(d.s.key, p, d.exp, d.ip)
	if err != nil {
		return dst, false
	}
	return rewrite.AppendQueryValue(append(append(dst, d.s.param...), '='), []byte(tok)), true
}
