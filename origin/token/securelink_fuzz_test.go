package token

import (
	"errors"
	"testing"
	"time"
)

// FuzzSecureLink: any expression, location and argument names either
// compile or are refused without a panic; a compiled one checks any
// request with a known reason, accepts the link it signs for a request,
// refuses it under another secret, and refuses it once past its expiry.
func FuzzSecureLink(f *testing.F) {
	f.Add(documented.Expression, "", "md5", "expires", "/s/link", "VLC/3.0", "md5="+nginxHash+"&expires=2147483647")
	f.Add("$secure_link_expires$1 $secret", `^/vod/([^/]+)/`, "md5", "expires", "/vod/title42/seg1.ts", "", "md5="+captureHash+"&expires=2147483647")
	f.Add("$secure_link_expires$uri$http_user_agent $secret", "", "md5", "expires", "/s/link", "VLC/3.0", "md5="+agentHash+"&expires=2147483647")
	f.Add("$uri $secret", "", "md5", "", "/s/link", "", "md5="+foreverHash)
	f.Add("$secure_link_expires$uri$arg_user $secret", "", "md5", "expires", "/s/link", "", "user=alice&md5="+argHash+"&expires=2147483647")
	f.Add("$arg_e$uri$remote_addr${secret}$9", `^/(.)(.)(.)(.)(.)(.)(.)(.)(.)?`, "st", "e", "/s/link", "", "st=x&e=1")
	f.Add("$expires$uri$secret $", "", "md5", "expires", "/a", "", "")
	f.Fuzz(func(t *testing.T, expr, loc, hashArg, expiresArg, uri, agent, query string) {
		c := SecureLinkConfig{Secret: "secret", Expression: expr, HashArg: hashArg, ExpiresArg: expiresArg, Location: loc}
		s, err := NewSecureLink(c)
		if err != nil {
			return
		}
		r := linkReq(s, query, uri, "192.0.2.1", agent)
		if _, err := s.Verify(r, t0); !isSentinel(err) {
			t.Fatalf("Verify(%q, %q) with %+v = %v, want nil or a sentinel", query, uri, c, err)
		}
		until := time.Unix(2147483647, 0)
		hash, exp, err := s.Sign(*r, until)
		if err != nil {
			return // an unclean path, or one outside the location
		}
		r.Hash, r.Expires = []byte(hash), []byte(exp)
		if (exp == "") == s.Expires() {
			t.Fatalf("Sign with %+v gave expiry %q, want one only when links expire", c, exp)
		}
		if got, err := s.Verify(r, t0); err != nil || (s.Expires() && got != until.Unix()) {
			t.Fatalf("Verify(Sign(%q)) with %+v = %d, %v, want %d, <nil>", uri, c, got, err, until.Unix())
		}
		if _, err := s.Verify(r, until.Add(time.Second)); s.Expires() != errors.Is(err, ErrExpired) {
			t.Fatalf("Verify(Sign(%q)) past the expiry with %+v = %v, want expired only when links expire", uri, c, err)
		}
		c.Secret = "Secret"
		other, _ := NewSecureLink(c)
		if _, err := other.Verify(r, t0); !errors.Is(err, ErrSignature) {
			t.Fatalf("Verify(Sign(%q)) under another secret with %+v = %v, want %v", uri, c, err, ErrSignature)
		}
	})
}
