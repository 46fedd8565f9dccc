package token

import (
	"bytes"
	"strings"
)

// matchACL reports whether path matches one of the '!'-separated patterns
// in acl. It runs only on authenticated tokens, so the patterns are the
// signer's; the path is the client's.
func matchACL(acl []byte, path string) bool {
	for {
		pattern, rest, more := bytes.Cut(acl, []byte{'!'})
		if matchPattern(pattern, path) {
			return true
		}
		if !more {
			return false
		}
		acl = rest
	}
}

// matchPattern reports whether s matches pattern p, where '*' matches any
// run of bytes ('/' included) and every other byte matches itself. So a
// pattern without '*' is an exact path and one ending in '*' a prefix.
//
// Greedy matching with one backtrack point is exact for this language:
// when a later '*' is reached, every earlier choice that led here is as
// good as any other, so only the latest '*' needs retrying. The cost is at
// most len(p)*len(s) byte comparisons and nothing is allocated.
func matchPattern(p []byte, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0 // last '*' seen in p, and where in s its match ends
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			mark++
			pi, si = star+1, mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// validACL reports whether acl holds no empty pattern.
func validACL(acl []byte) bool {
	return len(acl) > 0 && acl[0] != '!' && acl[len(acl)-1] != '!' &&
		!bytes.Contains(acl, []byte("!!"))
}

// isClean reports whether p is a path as Verify's contract requires it:
// it starts with '/' and has no empty, "." or ".." segment (a trailing
// '/' is allowed). Verify refuses anything else, so a caller that forgets
// to clean cannot have /vod/title42/../title43/x matched against
// /vod/title42/*.
func isClean(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		seg := p[i+1:]
		if j := strings.IndexByte(seg, '/'); j >= 0 {
			seg = seg[:j]
		} else if seg == "" {
			return true // trailing slash
		}
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
