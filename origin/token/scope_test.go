package token

import (
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
