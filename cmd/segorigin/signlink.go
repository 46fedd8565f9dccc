package main

import (
	"errors"
	"flag"
	"fmt"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"time"

	"segorigin/origin/token"
)

// linkFlags are `segorigin sign`'s flags for nginx secure_link links:
// the server's -auth-securelink-* settings and the request fields the
// expression reads.
type linkFlags struct {
	secretFile, expression, args, location string
	remoteAddr, userAgent                  string
	headers, queryArgs                     listFlag
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func (f *linkFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.secretFile, "securelink-secret-file", "", "mint an nginx secure_link link with the secret in this `file` (the server's -auth-securelink-secret-file)")
	fs.StringVar(&f.expression, "securelink-expression", token.DefaultSecureLinkExpression, "secure_link_md5 expression, as the server's -auth-securelink-expression")
	fs.StringVar(&f.args, "securelink-args", "md5,expires", "hash and expiry arguments, as the server's -auth-securelink-args; the hash's alone: no expiry")
	fs.StringVar(&f.location, "securelink-location", "", "location regular expression, as the server's -auth-securelink-location")
	fs.StringVar(&f.remoteAddr, "remote-addr", "", "the client address, for $remote_addr")
	fs.StringVar(&f.userAgent, "user-agent", "", "the player's User-Agent, for $http_user_agent")
	fs.Var(&f.headers, "header", "`Name: value` of a request header the expression reads ($http_name); repeatable")
	fs.Var(&f.queryArgs, "arg", "`name=value` of a query argument the expression reads ($arg_name), added to the link; repeatable")
}

// sign returns the path and query of a secure_link link to uri, expiring
// at expires (unless links have no expiry). Every field the expression
// reads must be given, so that a link is never signed over a field left
// empty by mistake.
func (f *linkFlags) sign(fs *flag.FlagSet, uri string, expires time.Time) (string, error) {
	if !strings.HasPrefix(uri, "/") {
		return "", fmt.Errorf("-scope %q: want the link's path, starting with /", uri)
	}
	b, err := os.ReadFile(f.secretFile)
	if err != nil {
		return "", fmt.Errorf("-securelink-secret-file: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("-securelink-secret-file %s: empty", f.secretFile)
	}
	hashArg, expiresArg, err := token.ParseSecureLinkArgs(f.args)
	if err != nil {
		return "", fmt.Errorf("-securelink-args %q: %w", f.args, err)
	}
	s, err := token.NewSecureLink(token.SecureLinkConfig{Secret: secret, Expression: f.expression,
		HashArg: hashArg, ExpiresArg: expiresArg, Location: f.location})
	if err != nil {
		return "", fmt.Errorf("-securelink-expression %q: %w", f.expression, err)
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if s.UsesRemoteAddr() && !given["remote-addr"] {
		return "", errors.New("the expression reads $remote_addr: give -remote-addr")
	}
	r := token.LinkRequest{URI: uri, RemoteAddr: f.remoteAddr}
	headers, err := f.headerValues(given["user-agent"])
	if err != nil {
		return "", err
	}
	for i, h := range s.Headers() {
		v, ok := headers[h]
		switch {
		case !ok && h == "User-Agent":
			return "", errors.New("the expression reads the User-Agent header: give -user-agent")
		case !ok:
			return "", fmt.Errorf("the expression reads the %s header: give -header '%s: value'", h, h)
		}
		r.Headers[i] = []byte(v)
	}
	var query strings.Builder
	args := map[string]string{}
	for _, a := range f.queryArgs {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return "", fmt.Errorf("-arg %q: want name=value", a)
		}
		args[strings.ToLower(name)] = url.QueryEscape(value) // as the server reads it: raw
		fmt.Fprintf(&query, "%s=%s&", url.QueryEscape(name), url.QueryEscape(value))
	}
	for i, a := range s.Args() {
		v, ok := args[a]
		if !ok {
			return "", fmt.Errorf("the expression reads $arg_%s: give -arg %s=value", a, a)
		}
		r.Args[i] = []byte(v)
	}
	hash, exp, err := s.Sign(r, expires)
	if err != nil {
		return "", err
	}
	query.WriteString(hashArg + "=" + hash)
	if exp != "" {
		query.WriteString("&" + expiresArg + "=" + exp)
	}
	return uri + "?" + query.String(), nil
}

// headerValues reads -header (and -user-agent, when given) into canonical
// names.
func (f *linkFlags) headerValues(userAgent bool) (map[string]string, error) {
	h := map[string]string{}
	for _, kv := range f.headers {
		name, value, ok := strings.Cut(kv, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("-header %q: want 'Name: value'", kv)
		}
		h[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))] = strings.TrimSpace(value)
	}
	if userAgent {
		h["User-Agent"] = f.userAgent
	}
	return h, nil
}
