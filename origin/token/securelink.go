package token

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SecureLinkConfig is an nginx secure_link setup, for operators migrating
// from it:
//
//	location ~ <Location> {
//	    secure_link     $arg_<HashArg>,$arg_<ExpiresArg>;   # or $arg_<HashArg> alone: no expiry
//	    secure_link_md5 "<Expression, with $secret where nginx has the secret>";
//	}
//
// MD5 is nginx's choice, kept only for compatibility; new links should use
// Sign and Verifier.
type SecureLinkConfig struct {
	// Secret replaces $secret in Expression. It is not written into the
	// expression, so that the configuration can be logged.
	Secret string
	// Expression is secure_link_md5's: $secure_link_expires (or $expires),
	// $uri (the clean request path), $remote_addr, $http_<name> (a request
	// header, '_' for '-'), $arg_<name> (a query argument as sent), $1..$9
	// (Location's captures) and $secret; ${name} is also accepted.
	Expression string
	// HashArg and ExpiresArg name the query arguments ("md5", "expires").
	// ExpiresArg "" is the form without expiry: links valid until the
	// secret changes.
	HashArg, ExpiresArg string
	// Location, if not empty, is a regular expression (Go's RE2 syntax)
	// the request path must match, whose captures are $1..$9: nginx's
	// `location ~ regex`. A path it does not match is refused (ErrScope).
	Location string
}

// SecureLinkVerifier checks and mints links for a SecureLinkConfig. Safe
// for concurrent use.
type SecureLinkVerifier struct {
	secret     string
	expr       *linkExpr
	hashArg    string
	expiresArg string
	loc        *regexp.Regexp
}

// LinkRequest is what a link is checked against: its arguments as sent
// and the request fields the expression reads. FromQuery fills the
// arguments; the caller fills the rest.
type LinkRequest struct {
	Hash, Expires []byte // the hash and expiry arguments, raw (nil when absent)
	URI           string // the clean request path
	RemoteAddr    string // the client address in force
	// Headers holds the values of the fields Headers names, in order
	// (nil when absent); Args those of Args, filled by FromQuery.
	Headers [MaxLinkFields][]byte
	Args    [MaxLinkFields][]byte
}

// NewSecureLink compiles c, once. It refuses an expression that could be
// forged or replayed beyond what was meant: one without $secret, one
// reading neither $uri nor a capture (a link would open every path), an
// expiring form without $secure_link_expires (the expiry could be changed
// by anyone) and the form without expiry with it.
func NewSecureLink(c SecureLinkConfig) (*SecureLinkVerifier, error) {
	if c.Secret == "" {
		return nil, errors.New("token: secure link: empty secret")
	}
	s := &SecureLinkVerifier{secret: c.Secret, hashArg: strings.ToLower(c.HashArg), expiresArg: strings.ToLower(c.ExpiresArg)}
	if !validArgName(s.hashArg) || (s.expiresArg != "" && !validArgName(s.expiresArg)) || s.hashArg == s.expiresArg {
		return nil, fmt.Errorf("token: secure link arguments %q, %q: want two distinct names of [A-Za-z0-9_], or the hash's alone", c.HashArg, c.ExpiresArg)
	}
	e, err := compileLinkExpr(c.Expression, s.expiresArg)
	if err != nil {
		return nil, fmt.Errorf("token: secure link expression: %w", err)
	}
	s.expr = e
	if c.Location != "" {
		if s.loc, err = regexp.Compile(c.Location); err != nil {
			return nil, fmt.Errorf("token: secure link location: %w", err)
		}
	}
	switch {
	case !e.uses[linkSecret]:
		return nil, errors.New("token: secure link expression must use $secret (the secret goes in its file, not in the expression)")
	case !e.uses[linkURI] && !e.uses[linkCapture]:
		return nil, errors.New("token: secure link expression must use $uri or a capture $1..$9: otherwise a link opens every path")
	case s.expiresArg != "" && !e.uses[linkExpires]:
		return nil, errors.New("token: secure link expression must use $secure_link_expires: otherwise anyone can change a link's expiry")
	case s.expiresArg == "" && e.uses[linkExpires]:
		return nil, errors.New("token: secure link expression uses $secure_link_expires, but links have no expiry argument")
	case e.maxCapture > 0 && s.loc == nil:
		return nil, fmt.Errorf("token: secure link expression uses $%d but no location regular expression is set", e.maxCapture)
	case s.loc != nil && e.maxCapture > s.loc.NumSubexp():
		return nil, fmt.Errorf("token: secure link expression uses $%d but the location %q has %d captures", e.maxCapture, c.Location, s.loc.NumSubexp())
	}
	for _, a := range e.args {
		if a == s.hashArg {
			return nil, fmt.Errorf("token: secure link expression uses $arg_%s, the hash itself", a)
		}
	}
	return s, nil
}

// ParseSecureLinkArgs reads the argument list of nginx's secure_link
// directive: "md5,expires", "$arg_md5,$arg_expires", or one name alone
// (links without expiry, expires "").
func ParseSecureLinkArgs(list string) (hash, expires string, err error) {
	hash, expires, two := strings.Cut(list, ",")
	hash = strings.TrimPrefix(strings.TrimSpace(hash), "$arg_")
	expires = strings.TrimPrefix(strings.TrimSpace(expires), "$arg_")
	if !validArgName(hash) || (two && !validArgName(expires)) {
		return "", "", errors.New("want the hash's and the expiry's argument names, such as md5,expires or $arg_st,$arg_e, or the hash's alone for links without expiry")
	}
	return hash, expires, nil
}

// UsesRemoteAddr reports whether the expression reads $remote_addr.
func (s *SecureLinkVerifier) UsesRemoteAddr() bool { return s.expr.uses[linkRemoteAddr] }

// Headers names the request headers the expression reads ($http_*), in
// the order LinkRequest.Headers holds their values.
func (s *SecureLinkVerifier) Headers() []string { return s.expr.headers }

// Args names the query arguments the expression reads ($arg_* other than
// the expiry), in the order LinkRequest.Args holds their values.
func (s *SecureLinkVerifier) Args() []string { return s.expr.args }

// Names returns the hash and expiry arguments' names (expiry "" when
// links have none).
func (s *SecureLinkVerifier) Names() (hash, expires string) { return s.hashArg, s.expiresArg }

// Expires reports whether links carry an expiry.
func (s *SecureLinkVerifier) Expires() bool { return s.expiresArg != "" }

// FromQuery fills r's Hash, Expires and Args from a raw query, as nginx's
// $arg_* read it.
func (s *SecureLinkVerifier) FromQuery(r *LinkRequest, query []byte) {
	r.Hash = QueryArg(query, s.hashArg)
	r.Expires = nil
	if s.expiresArg != "" {
		r.Expires = QueryArg(query, s.expiresArg)
	}
	for i, a := range s.expr.args {
		r.Args[i] = QueryArg(query, a)
	}
}

// Verify checks r at now and returns the link's expiry (Unix seconds; 0
// for links without one). As in nginx, the link is valid up to and
// including its expiry second, with no skew; the hash is checked before
// the time, so that ErrExpired describes a link the secret's holder made.
// Padding ('=') after the hash is tolerated, as nginx does. A request
// without the hash argument is the caller's to answer (no token).
func (s *SecureLinkVerifier) Verify(r *LinkRequest, now time.Time) (expiry int64, err error) {
	if !isClean(r.URI) {
		return 0, errRawPath
	}
	if s.expiresArg != "" {
		if exp, ok := parseUnix(r.Expires); ok && exp > 0 {
			expiry = exp
		} else {
			return 0, errLinkExpires
		}
	}
	if len(r.Hash) > 24 { // nginx's limit too; and the conversion below stays on the stack
		return 0, errLinkHash
	}
	var want [md5.Size + 1]byte // decodeSegment wants room for 22*6/8 bytes
	hash := strings.TrimSuffix(strings.TrimSuffix(string(r.Hash), "="), "=")
	if len(hash) != 22 {
		return 0, errLinkHash
	}
	if n, err := decodeSegment(want[:], hash); err != nil || n != md5.Size {
		return 0, errLinkHash
	}
	caps, ok := s.captures(r.URI)
	if !ok {
		return 0, errLocation
	}
	var buf [512]byte
	got := md5.Sum(s.appendMessage(buf[:0], r, caps))
	if subtle.ConstantTimeCompare(got[:], want[:md5.Size]) != 1 {
		return 0, ErrSignature
	}
	if expiry != 0 && now.Unix() > expiry {
		return expiry, ErrExpired
	}
	return expiry, nil
}

var errLocation = &detailError{kind: ErrScope, msg: "path does not match the secure link location"}

// captures matches the location against uri: the submatch indices (nil
// when there is no location), and whether it matched.
func (s *SecureLinkVerifier) captures(uri string) ([]int, bool) {
	if s.loc == nil {
		return nil, true
	}
	if s.expr.maxCapture == 0 {
		return nil, s.loc.MatchString(uri) // no allocation
	}
	caps := s.loc.FindStringSubmatchIndex(uri)
	return caps, caps != nil
}

// appendMessage appends the expression with its variables filled in; caps
// are the location's submatch indices into r.URI. An absent field or a
// capture that did not participate is empty, as in nginx.
func (s *SecureLinkVerifier) appendMessage(dst []byte, r *LinkRequest, caps []int) []byte {
	for _, p := range s.expr.parts {
		switch p.v {
		case linkLiteral:
			dst = append(dst, p.lit...)
		case linkExpires:
			dst = append(dst, r.Expires...)
		case linkURI:
			dst = append(dst, r.URI...)
		case linkRemoteAddr:
			dst = append(dst, r.RemoteAddr...)
		case linkSecret:
			dst = append(dst, s.secret...)
		case linkHeader:
			dst = append(dst, r.Headers[p.i]...)
		case linkArg:
			dst = append(dst, r.Args[p.i]...)
		case linkCapture:
			if lo, hi := caps[2*p.i], caps[2*p.i+1]; lo >= 0 {
				dst = append(dst, r.URI[lo:hi]...)
			}
		}
	}
	return dst
}

// Sign returns the hash and expiry arguments of a link for r (its URI,
// and the headers, arguments and address the expression reads), valid
// until expires; expires is ignored, and expiresArg empty, for links
// without expiry. r.Hash and r.Expires are ignored.
func (s *SecureLinkVerifier) Sign(r LinkRequest, expires time.Time) (hash, expiresArg string, err error) {
	if !isClean(r.URI) {
		return "", "", fmt.Errorf("token: secure link: uri %q is not a clean path", r.URI)
	}
	r.Expires = nil
	if s.expiresArg != "" {
		if expires.Unix() <= 0 {
			return "", "", errors.New("token: secure link: expiry must be after 1970")
		}
		expiresArg = strconv.FormatInt(expires.Unix(), 10)
		r.Expires = []byte(expiresArg)
	}
	caps, ok := s.captures(r.URI)
	if !ok {
		return "", "", fmt.Errorf("token: secure link: uri %q does not match the location %q", r.URI, s.loc)
	}
	sum := md5.Sum(s.appendMessage(nil, &r, caps))
	return base64.RawURLEncoding.EncodeToString(sum[:]), expiresArg, nil
}

// DefaultSecureLinkExpression is nginx's documentation's secure_link_md5,
// with the secret as $secret.
const DefaultSecureLinkExpression = "$secure_link_expires$uri$remote_addr $secret"

// SignSecureLink signs a link to uri for remoteAddr until expires with
// nginx's documented form (md5= and expires=, expression expr), for
// one-off links and tests.
func SignSecureLink(secret, expr, uri, remoteAddr string, expires time.Time) (hash, expiresArg string, err error) {
	s, err := NewSecureLink(SecureLinkConfig{Secret: secret, Expression: expr, HashArg: "md5", ExpiresArg: "expires"})
	if err != nil {
		return "", "", err
	}
	return s.Sign(LinkRequest{URI: uri, RemoteAddr: remoteAddr}, expires)
}

// InLocation reports whether uri matches the location regular
// expression (always, without one): the paths a link can open at all.
func (s *SecureLinkVerifier) InLocation(uri string) bool {
	_, ok := s.captures(uri)
	return ok
}
