package token

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecureLinkVerifier checks links made for nginx's secure_link module, for
// operators migrating from it: the hash is MD5 over an expression built
// from the expiry, the URI, the client address and a secret, sent as
// base64url without padding, with the expiry beside it as Unix seconds:
//
//	secure_link     $arg_md5,$arg_expires;
//	secure_link_md5 "$secure_link_expires$uri$remote_addr secret";
//
// becomes NewSecureLink("secret", "$expires$uri$remote_addr $secret").
// MD5 is nginx's choice, kept only for compatibility; new links should use
// Sign and Verifier. Safe for concurrent use.
type SecureLinkVerifier struct {
	secret string
	parts  []linkPart // the expression, split at its variables
}

// linkVar names what a part of the expression stands for.
type linkVar uint8

const (
	linkLiteral linkVar = iota
	linkExpires
	linkURI
	linkRemoteAddr
	linkSecret
)

type linkPart struct {
	v   linkVar
	lit string // the text, when v is linkLiteral
}

// NewSecureLink returns a verifier for links hashed over expression, in
// which $expires (or nginx's $secure_link_expires), $uri, $remote_addr and
// $secret (also written ${name}) stand for the expiry as sent, the clean
// request path, the client address and secret. Any other '$' is an error,
// as is an expression without $expires, $uri and $secret: put the secret
// in secret, not in the expression, so that configuration can be logged.
func NewSecureLink(secret, expression string) (*SecureLinkVerifier, error) {
	if secret == "" {
		return nil, errors.New("token: secure link: empty secret")
	}
	parts, err := parseLinkExpression(expression)
	if err != nil {
		return nil, fmt.Errorf("token: secure link expression: %w", err)
	}
	var have [linkSecret + 1]bool
	for _, p := range parts {
		have[p.v] = true
	}
	if !have[linkExpires] || !have[linkURI] || !have[linkSecret] {
		return nil, errors.New("token: secure link expression must use $expires, $uri and $secret")
	}
	return &SecureLinkVerifier{secret: secret, parts: parts}, nil
}

func parseLinkExpression(expr string) ([]linkPart, error) {
	var parts []linkPart
	for expr != "" {
		i := strings.IndexByte(expr, '$')
		if i < 0 {
			parts = append(parts, linkPart{lit: expr})
			break
		}
		if i > 0 {
			parts = append(parts, linkPart{lit: expr[:i]})
		}
		expr = expr[i+1:]
		var name string
		if strings.HasPrefix(expr, "{") {
			end := strings.IndexByte(expr, '}')
			if end < 0 {
				return nil, errors.New("unclosed ${")
			}
			name, expr = expr[1:end], expr[end+1:]
		} else {
			n := 0
			for n < len(expr) && (isAlnum(expr[n]) || expr[n] == '_') {
				n++
			}
			name, expr = expr[:n], expr[n:]
		}
		v, ok := linkVarNamed(name)
		if !ok {
			return nil, fmt.Errorf("unknown variable $%s", name)
		}
		parts = append(parts, linkPart{v: v})
	}
	return parts, nil
}

func linkVarNamed(name string) (linkVar, bool) {
	switch name {
	case "expires", "secure_link_expires":
		return linkExpires, true
	case "uri":
		return linkURI, true
	case "remote_addr":
		return linkRemoteAddr, true
	case "secret":
		return linkSecret, true
	}
	return 0, false
}

// Verify checks a link's hash and expires arguments for a request of uri
// (clean, as for Verifier.Verify) from remoteAddr at now. As in nginx, the
// link is valid up to and including its expiry second, with no skew.
// Padding ('=') after the hash is tolerated, as nginx does.
func (s *SecureLinkVerifier) Verify(hash, expires, uri, remoteAddr string, now time.Time) error {
	if !isClean(uri) {
		return errRawPath
	}
	exp, ok := parseUnix(expires)
	if !ok || exp <= 0 {
		return errLinkExpires
	}
	var want [md5.Size + 1]byte // decodeSegment wants room for 22*6/8 bytes
	hash = strings.TrimSuffix(strings.TrimSuffix(hash, "="), "=")
	if len(hash) != 22 {
		return errLinkHash
	}
	if n, err := decodeSegment(want[:], hash); err != nil || n != md5.Size {
		return errLinkHash
	}
	var buf [512]byte
	got := md5.Sum(s.appendMessage(buf[:0], expires, uri, remoteAddr))
	if subtle.ConstantTimeCompare(got[:], want[:md5.Size]) != 1 {
		return ErrSignature
	}
	if now.Unix() > exp {
		return ErrExpired
	}
	return nil
}

// appendMessage appends the expression with its variables filled in.
func (s *SecureLinkVerifier) appendMessage(dst []byte, expires, uri, remoteAddr string) []byte {
	for _, p := range s.parts {
		switch p.v {
		case linkLiteral:
			dst = append(dst, p.lit...)
		case linkExpires:
			dst = append(dst, expires...)
		case linkURI:
			dst = append(dst, uri...)
		case linkRemoteAddr:
			dst = append(dst, remoteAddr...)
		case linkSecret:
			dst = append(dst, s.secret...)
		}
	}
	return dst
}

// Sign returns the hash and expires arguments of a link to uri for
// remoteAddr (ignored unless the expression uses it), valid until expires.
func (s *SecureLinkVerifier) Sign(uri, remoteAddr string, expires time.Time) (hash, expiresArg string, err error) {
	if !isClean(uri) {
		return "", "", fmt.Errorf("token: secure link: uri %q is not a clean path", uri)
	}
	if expires.Unix() <= 0 {
		return "", "", errors.New("token: secure link: expiry must be after 1970")
	}
	expiresArg = strconv.FormatInt(expires.Unix(), 10)
	sum := md5.Sum(s.appendMessage(nil, expiresArg, uri, remoteAddr))
	return base64.RawURLEncoding.EncodeToString(sum[:]), expiresArg, nil
}

// SignSecureLink is NewSecureLink followed by Sign, for one-off links.
func SignSecureLink(secret, expression, uri, remoteAddr string, expires time.Time) (hash, expiresArg string, err error) {
	s, err := NewSecureLink(secret, expression)
	if err != nil {
		return "", "", err
	}
	return s.Sign(uri, remoteAddr, expires)
}
