package token

import (
	"strings"
	"testing"
	"time"
)

// FuzzSignScope: a scope credential made for any scope SignScope accepts
// verifies for what it opens and nothing else. Invariants: a directory's
// credential opens every clean path under it and covers its tree, and
// never a path outside it; an exact path's opens that path alone; no
// panic.
func FuzzSignScope(f *testing.F) {
	for _, s := range []string{"/vod/title42/", "/vod/enc.key", "/", "/a*b/", "/vod/../x/", "/vod/a b/", "/vod/title42"} {
		f.Add(s, "x/y.m4s")
	}
	key := Key{ID: "scope", Secret: []byte("0123456789abcdef0123456789abcdef")}
	v := testVerifier(f, key)
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, scope, rest string) {
		tok, err := SignScope(key, scope, now.Add(time.Hour), "")
		if err != nil {
			return
		}
		s := ParseScope([]byte(tok))
		dir := strings.HasSuffix(scope, "/")
		if dir != s.CoversTree(scope) {
			t.Fatalf("SignScope(%q) = %q: CoversTree(scope) = %v, want %v", scope, tok, !dir, dir)
		}
		if err := v.Verify(tok, scope, "", now); err != nil {
			t.Fatalf("SignScope(%q) = %q: Verify(scope) = %v, want nil", scope, tok, err)
		}
		p := scope + rest
		if err := v.Verify(tok, p, "", now); err == nil && rest != "" && !(dir && isClean(p)) {
			t.Fatalf("SignScope(%q) = %q opens %q", scope, tok, p)
		}
		if dir && isClean(p) {
			if err := v.Verify(tok, p, "", now); err != nil {
				t.Fatalf("SignScope(%q) = %q: Verify(%q) = %v, want nil", scope, tok, p, err)
			}
		}
		if outside := "/other" + scope; v.Verify(tok, outside, "", now) == nil && !strings.HasPrefix(outside, scope) {
			t.Fatalf("SignScope(%q) = %q opens %q", scope, tok, outside)
		}
	})
}
