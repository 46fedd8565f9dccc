package token

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestCovers(t *testing.T) {
	key := Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	exp := time.Unix(2000000000, 0)
	tok, err := Sign(key, Claims{Expiry: exp, ACL: []string{"/vod/title42/*", "/extra/one.ts"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       bool
	}{
		{"under the prefix", "/vod/title42/hls/seg1.ts", true},
		{"the exact pattern", "/extra/one.ts", true},
		{"another title", "/vod/title43/hls/seg1.ts", false},
		{"a sibling of the exact pattern", "/extra/two.ts", false},
		{"dot segments climbing out", "/vod/title42/../title43/a.ts", false},
		{"not rooted", "vod/title42/a.ts", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Covers([]byte(tok), tc.path); got != tc.want {
				t.Errorf("Covers(%q, %q) = %v, want %v", tok, tc.path, got, tc.want)
			}
		})
	}
	if Covers([]byte("exp=1~hmac=zz"), "/vod/title42/a.ts") {
		t.Error("Covers of a malformed token = true, want false")
	}
	// URL form: no acl=, so it opens only the path it was verified for.
	urlForm := "exp=2000000000~hmac=0000000000000000000000000000000000000000000000000000000000000000"
	if Covers([]byte(urlForm), "/vod/title42/a.ts") {
		t.Error("Covers of a URL-form token = true, want false")
	}
}

// TestSignScope: a scope credential for a title's directory opens every
// path under it until its expiry, from its address only, and never
// another title, a sibling directory sharing the name's prefix, or a
// path climbing out with dot segments; one for a single path (a key
// outside the directory) opens that path alone. Scopes the ACL could not
// write exactly are refused.
func TestSignScope(t *testing.T) {
	key := Key{ID: "scope", Secret: []byte("0123456789abcdef0123456789abcdef")}
	ring, err := NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(VerifierConfig{Keys: ring})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	exp := now.Add(time.Hour)
	dir, err := SignScope(key, "/vod/title42/", exp, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	one, err := SignScope(key, "/vod/enc.key", exp, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tok, path, ip string
		at                  time.Time
		want                error
	}{
		{"a chunk under the directory", dir, "/vod/title42/dash/chunk-0-00001.m4s", "192.0.2.1", now, nil},
		{"the directory's own manifest", dir, "/vod/title42/manifest.mpd", "192.0.2.1", now, nil},
		{"another title", dir, "/vod/title43/manifest.mpd", "192.0.2.1", now, ErrScope},
		{"a sibling sharing the prefix", dir, "/vod/title420/manifest.mpd", "192.0.2.1", now, ErrScope},
		{"climbing out", dir, "/vod/title42/../title43/a.ts", "192.0.2.1", now, ErrScope},
		{"the parent's key", dir, "/vod/enc.key", "192.0.2.1", now, ErrScope},
		{"another address", dir, "/vod/title42/a.ts", "192.0.2.2", now, ErrIP},
		{"after its expiry", dir, "/vod/title42/a.ts", "192.0.2.1", exp.Add(time.Second), ErrExpired},
		{"the key itself", one, "/vod/enc.key", "", now, nil},
		{"beside the key", one, "/vod/enc.key2", "", now, ErrScope},
		{"under the key's directory", one, "/vod/title42/a.ts", "", now, ErrScope},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := v.Verify(tc.tok, tc.path, tc.ip, tc.at); !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Errorf("Verify(%q, %q, %q) = %v, want %v", tc.tok, tc.path, tc.ip, err, tc.want)
			}
		})
	}
	if s := ParseScope([]byte(dir)); !s.Expiry().Equal(exp) || s.IP() != "192.0.2.1" {
		t.Errorf("ParseScope(%q) expiry %v, ip %q; want %v, 192.0.2.1", dir, s.Expiry(), s.IP(), exp)
	}
	for _, bad := range []string{"vod/title42/", "/vod/../x/", "/vod/a*b/", "/vod/a!b/", "/vod/a b/", "/vod/a~b/", "/vod//x/"} {
		if tok, err := SignScope(key, bad, exp, ""); err == nil {
			t.Errorf("SignScope(%q) = %q, want an error", bad, tok)
		}
	}
}

// TestDeriveKey: the derived key is a pure function of the secret, differs
// from it and between secrets, and an empty secret has none.
func TestDeriveKey(t *testing.T) {
	a, err := DeriveKey("scope", []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := DeriveKey("scope", []byte("s3cret"))
	other, _ := DeriveKey("scope", []byte("s3cret2"))
	if !bytes.Equal(a.Secret, again.Secret) || len(a.Secret) != 32 {
		t.Errorf("DeriveKey twice = %x, %x; want the same 32 bytes", a.Secret, again.Secret)
	}
	if bytes.Equal(a.Secret, other.Secret) || bytes.Equal(a.Secret, []byte("s3cret")) {
		t.Errorf("DeriveKey(s3cret) = %x: equal to another secret's (%x) or to the secret", a.Secret, other.Secret)
	}
	if _, err := DeriveKey("scope", nil); err == nil {
		t.Error("DeriveKey of an empty secret: no error")
	}
}

// TestCoversTree: a prefix pattern covers every directory under it; an
// exact pattern, a pattern with an inner '*', or another tree does not.
func TestCoversTree(t *testing.T) {
	key := Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	tok := mustSign(t, key, Claims{Expiry: time.Unix(2000000000, 0), ACL: []string{"/vod/title42/*", "/extra/one.ts", "/live/*/x/*"}})
	s := ParseScope([]byte(tok))
	if !s.OpensTrees() {
		t.Errorf("ParseScope(%q).OpensTrees() = false, want true", tok)
	}
	for dir, want := range map[string]bool{
		"/vod/title42/": true, "/vod/title42/dash/": true, "/vod/": false, "/vod/title43/": false,
		"/extra/": false, "/live/a/x/": false, "/vod/title42/../title43/": false, "/vod/title42": false,
	} {
		if got := s.CoversTree(dir); got != want {
			t.Errorf("ParseScope(%q).CoversTree(%q) = %v, want %v", tok, dir, got, want)
		}
	}
	exact := ParseScope([]byte(mustSign(t, key, Claims{Expiry: time.Unix(2000000000, 0), ACL: []string{"/vod/title42/manifest.mpd"}})))
	if exact.OpensTrees() || exact.CoversTree("/vod/title42/") {
		t.Error("an exact-path token opens trees")
	}
}
