package access

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Referers is a valid_referers list. The zero Referers (no valid_referers
// statement) finds every request valid.
type Referers struct {
	on          bool              // a valid_referers statement was given
	none        bool              // "none": a request without Referer is valid
	blocked     bool              // "blocked": a Referer without http:// or https:// is valid
	serverNames bool              // "server_names": the request's Host is a valid name
	exact       map[string]string // host -> path prefix ("" any path)
	head        map[string]string // "example.com" of "*.example.com" -> path prefix
	tail        map[string]string // "www.example." of "www.example.*" -> path prefix
	regex       []*regexp.Regexp
}

// maxHost is nginx's bound on the host it looks up (its buffer): a
// longer one is invalid.
const maxHost = 255

// add reads one valid_referers argument.
func (v *Referers) add(arg string) error {
	v.on = true
	switch {
	case arg == "":
		return errors.New(`invalid referer ""`)
	case arg == "none":
		v.none = true
		return nil
	case arg == "blocked":
		v.blocked = true
		return nil
	case arg == "server_names":
		v.serverNames = true
		return nil
	case arg[0] == '~':
		if len(arg) == 1 {
			return errors.New(`empty regex in "~"`)
		}
		re, err := regexp.Compile("(?i)" + arg[1:])
		if err != nil {
			return fmt.Errorf("%q: %w", arg, err)
		}
		v.regex = append(v.regex, re)
		return nil
	}
	name, path := arg, ""
	if i := strings.IndexByte(arg, '/'); i >= 0 {
		name, path = arg[:i], arg[i:]
	}
	return v.addName(strings.ToLower(name), path, arg)
}

// addName files name (an exact host, "*.host", ".host" or "host.*") with
// the path prefix its referers need.
func (v *Referers) addName(name, path, arg string) error {
	put := func(m *map[string]string, key string) error {
		if *m == nil {
			*m = make(map[string]string)
		}
		if _, dup := (*m)[key]; dup {
			return fmt.Errorf("conflicting parameter %q", arg)
		}
		(*m)[key] = path
		return nil
	}
	var key string
	var m *map[string]string
	switch {
	case strings.HasPrefix(name, "*."):
		key, m = name[2:], &v.head
	case strings.HasPrefix(name, "."):
		// ".example.com" is example.com and every name under it.
		key, m = name[1:], &v.head
		if validHost(key) {
			if err := put(&v.exact, key); err != nil {
				return err
			}
		}
	case strings.HasSuffix(name, ".*"):
		key, m = name[:len(name)-1], &v.tail
	default:
		key, m = name, &v.exact
	}
	if !validHost(strings.TrimSuffix(key, ".")) {
		return fmt.Errorf("invalid hostname or wildcard %q", arg)
	}
	return put(m, key)
}

// validHost: a name for the table: not empty, no '*', no empty label, no
// byte that ends a host in a Referer, not longer than maxHost.
func validHost(s string) bool {
	return s != "" && len(s) <= maxHost && !strings.ContainsAny(s, "*:/ \t") &&
		!strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".") && !strings.Contains(s, "..")
}

// finish checks the list once it is whole: as nginx, "none" and
// "blocked" alone name no valid referer, which is a mistake.
func (v *Referers) finish() error {
	if v.on && len(v.exact)+len(v.head)+len(v.tail)+len(v.regex) == 0 && !v.serverNames {
		return errors.New(`the "none" or "blocked" referers are specified without any valid referer`)
	}
	return nil
}

// Check judges a Referer (present: the request has the field; value: its
// first value) for a request to host (its Host, a port allowed), as
// ngx_http_referer_variable does.
func (v *Referers) Check(value []byte, present bool, host []byte) Verdict {
	switch {
	case !v.on:
		return Allowed
	case !present:
		return v.allow(v.none, RefererMissing)
	}
	rest, ok := cutScheme(value)
	if !ok {
		return v.allow(v.blocked, RefererBlocked)
	}
	end := bytes.IndexAny(rest, "/:")
	if end < 0 {
		end = len(rest)
	}
	if end > maxHost {
		return RefererHost
	}
	var buf [maxHost]byte
	name := lower(buf[:0], rest[:end])
	if path, found := v.lookup(name, host); found {
		p := rest[end:]
		if i := bytes.IndexByte(p, '/'); i >= 0 {
			p = p[i:]
		} else {
			p = nil
		}
		if !bytes.HasPrefix(p, []byte(path)) {
			return RefererPath
		}
		return Allowed
	}
	for _, re := range v.regex {
		if re.Match(rest) {
			return Allowed
		}
	}
	return RefererHost
}

// allow is Allowed when ok, else why.
func (v *Referers) allow(ok bool, why Verdict) Verdict {
	if ok {
		return Allowed
	}
	return why
}

// cutScheme returns value after "http://" or "https://" (any case); ok is
// false for anything else, and for a value shorter than "http://i.ru"
// (nginx's test).
func cutScheme(value []byte) (rest []byte, ok bool) {
	if len(value) < len("http://i.ru") {
		return nil, false
	}
	for _, s := range []string{"http://", "https://"} {
		if len(value) >= len(s) && strings.EqualFold(string(value[:len(s)]), s) {
			return value[len(s):], true
		}
	}
	return nil, false
}

// lookup finds name's path prefix: the request's host (server_names),
// then the exact names, then "*.x" and ".x" by the longest suffix, then
// "x.*" by the longest prefix.
func (v *Referers) lookup(name []byte, host []byte) (path string, found bool) {
	if v.serverNames && sameHost(name, host) {
		return "", true
	}
	if path, found = v.exact[string(name)]; found {
		return path, true
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if path, found = v.head[string(name[i+1:])]; found {
				return path, true
			}
		}
	}
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			if path, found = v.tail[string(name[:i+1])]; found {
				return path, true
			}
		}
	}
	return "", false
}

// sameHost: name (lowercased) is host without its port, compared without
// case.
func sameHost(name, host []byte) bool {
	if i := bytes.LastIndexByte(host, ':'); i >= 0 && !bytes.HasSuffix(host, []byte("]")) {
		host = host[:i]
	}
	return len(host) > 0 && bytes.EqualFold(name, host)
}

// lower appends b in ASCII lower case to dst.
func lower(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
