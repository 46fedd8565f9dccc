package token

import (
	"bytes"
	"errors"
	"fmt"
	"net/textproto"
	"strings"
)

// MaxLinkFields bounds the distinct $http_* headers, and separately the
// distinct $arg_* arguments, one expression may read, so that a request's
// values fit in LinkRequest's fixed arrays (no allocation per request).
const MaxLinkFields = 8

// linkVar names what a part of the expression stands for.
type linkVar uint8

const (
	linkLiteral    linkVar = iota
	linkExpires            // $secure_link_expires, $expires, $arg_<expiry argument>
	linkURI                // $uri
	linkRemoteAddr         // $remote_addr
	linkSecret             // $secret
	linkHeader             // $http_<name>: index into linkExpr.headers
	linkArg                // $arg_<name>: index into linkExpr.args
	linkCapture            // $1..$9: the capture's number
	numLinkVars
)

type linkPart struct {
	v   linkVar
	lit string // the text, when v is linkLiteral
	i   int    // the header, argument or capture, for linkHeader, linkArg, linkCapture
}

// linkExpr is a secure_link_md5 expression compiled once, at start: its
// literal runs and variables in order, and the request fields it reads.
type linkExpr struct {
	parts       []linkPart
	headers     []string // canonical names of the $http_* headers, each once
	args        []string // lowercase names of the $arg_* arguments, each once
	maxCapture  int      // the highest $N used; 0: none
	uses        [numLinkVars]bool
	expiresName string // the expiry argument, lowercase: $arg_<it> is $secure_link_expires
}

// compileLinkExpr parses expr with nginx's variable syntax: $name or
// ${name}, where a name is a run of [A-Za-z0-9_] (so "$uri_x" is the
// variable uri_x, as nginx reads it), and $1..$9 (one digit, as nginx
// reads "$12" as $1 then "2") are the location's captures. Variable names
// are compared without case, as nginx does. expiresArg names the expiry
// argument (lowercase; "" for links without expiry), whose $arg_ form is
// $secure_link_expires.
func compileLinkExpr(expr, expiresArg string) (*linkExpr, error) {
	e := &linkExpr{expiresName: expiresArg}
	for expr != "" {
		i := strings.IndexByte(expr, '$')
		if i < 0 {
			e.parts = append(e.parts, linkPart{lit: expr})
			break
		}
		if i > 0 {
			e.parts = append(e.parts, linkPart{lit: expr[:i]})
		}
		expr = expr[i+1:]
		var name string
		switch {
		case expr != "" && '1' <= expr[0] && expr[0] <= '9':
			name, expr = expr[:1], expr[1:]
		case strings.HasPrefix(expr, "{"):
			end := strings.IndexByte(expr, '}')
			if end < 0 {
				return nil, errors.New("unclosed ${")
			}
			name, expr = expr[1:end], expr[end+1:]
		default:
			n := 0
			for n < len(expr) && (isAlnum(expr[n]) || expr[n] == '_') {
				n++
			}
			name, expr = expr[:n], expr[n:]
		}
		p, err := e.variable(strings.ToLower(name))
		if err != nil {
			return nil, err
		}
		e.uses[p.v] = true
		e.parts = append(e.parts, p)
	}
	return e, nil
}

// variable resolves one variable's name (lowercase).
func (e *linkExpr) variable(name string) (linkPart, error) {
	switch name {
	case "expires", "secure_link_expires":
		return linkPart{v: linkExpires}, nil
	case "uri":
		return linkPart{v: linkURI}, nil
	case "remote_addr":
		return linkPart{v: linkRemoteAddr}, nil
	case "secret":
		return linkPart{v: linkSecret}, nil
	}
	if len(name) == 1 && '1' <= name[0] && name[0] <= '9' {
		n := int(name[0] - '0')
		e.maxCapture = max(e.maxCapture, n)
		return linkPart{v: linkCapture, i: n}, nil
	}
	if h, ok := strings.CutPrefix(name, "http_"); ok && validArgName(h) {
		// nginx's $http_user_agent is the User-Agent field: '_' for '-'.
		canon := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(h, "_", "-"))
		i, err := indexOrAdd(&e.headers, canon)
		return linkPart{v: linkHeader, i: i}, err
	}
	if a, ok := strings.CutPrefix(name, "arg_"); ok && validArgName(a) {
		if a == e.expiresName {
			return linkPart{v: linkExpires}, nil
		}
		i, err := indexOrAdd(&e.args, a)
		return linkPart{v: linkArg, i: i}, err
	}
	return linkPart{}, fmt.Errorf("unknown variable $%s (want $secure_link_expires, $uri, $remote_addr, $http_<name>, $arg_<name>, $1..$9 or $secret)", name)
}

// indexOrAdd returns name's index in *list, adding it if new, up to
// MaxLinkFields names.
func indexOrAdd(list *[]string, name string) (int, error) {
	for i, n := range *list {
		if n == name {
			return i, nil
		}
	}
	if len(*list) == MaxLinkFields {
		return 0, fmt.Errorf("more than %d distinct $http_* or $arg_* variables", MaxLinkFields)
	}
	*list = append(*list, name)
	return len(*list) - 1, nil
}

// validArgName: the characters nginx allows in a variable name, at least
// one.
func validArgName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

// QueryArg returns the value of the first argument called name in a raw
// query (the bytes after '?'), as sent, not percent-decoded, matching the
// name without ASCII case: what nginx's $arg_<name> holds. Arguments are
// separated by '&' only, and one without '=' has no value to match.
func QueryArg(query []byte, name string) []byte {
	for len(query) > 0 {
		arg := query
		if i := bytes.IndexByte(query, '&'); i >= 0 {
			arg, query = query[:i], query[i+1:]
		} else {
			query = nil
		}
		if len(arg) > len(name) && arg[len(name)] == '=' && equalFoldASCII(arg[:len(name)], name) {
			return arg[len(name)+1:]
		}
	}
	return nil
}

// equalFoldASCII is nginx's ngx_strncasecmp: ASCII letters only
// (bytes.EqualFold would also fold, say, the Kelvin sign into 'k').
func equalFoldASCII(b []byte, s string) bool {
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
