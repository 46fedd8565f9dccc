package origin_test

import (
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/token"
)

// linkServer is authServer with nginx secure_link instead of keys, the
// secret "s3cret".
func linkServer(t *testing.T, now time.Time, mod func(*origin.AuthConfig)) *testServer {
	t.Helper()
	return serverMode{}.linkServer(t, now, mod)
}

// linkServer is linkServer in mode.
func (mode serverMode) linkServer(t *testing.T, now time.Time, mod func(*origin.AuthConfig)) *testServer {
	t.Helper()
	ts, _ := mode.authServer(t, now, func(a *origin.AuthConfig) {
		a.Keys = nil
		a.SecureLinkSecret = "s3cret"
		if mod != nil {
			mod(a)
		}
	})
	return ts
}

// signLink signs a link to uri with c (its Secret set to "s3cret").
func signLink(t *testing.T, c token.SecureLinkConfig, r token.LinkRequest, until time.Time) string {
	t.Helper()
	c.Secret = "s3cret"
	s, err := token.NewSecureLink(c)
	if err != nil {
		t.Fatal(err)
	}
	hash, exp, err := s.Sign(r, until)
	if err != nil {
		t.Fatal(err)
	}
	q := c.HashArg + "=" + hash
	if exp != "" {
		q += "&" + c.ExpiresArg + "=" + exp
	}
	return q
}

var documentedLink = token.SecureLinkConfig{Expression: token.DefaultSecureLinkExpression, HashArg: "md5", ExpiresArg: "expires"}

// TestSecureLinkExpiredStatus: an authentic link past its expiry (nginx's
// $secure_link "0") is answered 403 by default or 410 when the operator
// chose it (nginx's documented `if ($secure_link = "0") { return 410; }`);
// either way the reason counted is "expired" and the Cache-Control is
// that of refusals. A forged link stays 403.
func TestSecureLinkExpiredStatus(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	uri := "/vod/title42/v1/seg1.ts"
	expired := signLink(t, documentedLink, token.LinkRequest{URI: uri, RemoteAddr: "127.0.0.1"}, now.Add(-time.Second))
	forged := strings.Replace(expired, "md5=", "md5=A", 1)[:len(expired)]
	for _, status := range []int{403, 410} {
		ts := linkServer(t, now, func(a *origin.AuthConfig) { a.SecureLinkExpiredStatus = status })
		r := ts.get(uri + "?" + expired)
		mustStatus(t, r, status, "expired link")
		mustHeader(t, r, "Cache-Control", "no-store", "expired link")
		mustStatus(t, ts.get(uri+"?"+forged), 403, "forged link")
		if got := ts.srv.Stats().Auth.ByReason[origin.AuthExpired]; got != 1 {
			t.Errorf("status %d: auth expired count %d, want 1", status, got)
		}
	}
}

// TestSecureLinkReload: Reload (what SIGHUP calls) brings new
// secure_link settings into force; settings that do not compile are
// refused, naming the flag, and the old ones stay.
func TestSecureLinkReload(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	uri := "/vod/title42/v1/seg1.ts"
	ts := linkServer(t, now, nil)
	cfg := ts.cfg.Auth
	reloadAuth := func(a origin.AuthConfig) error {
		next := ts.cfg
		next.Auth = a
		_, err := ts.srv.Reload(reloadTo(next))
		return err
	}
	old := signLink(t, documentedLink, token.LinkRequest{URI: uri, RemoteAddr: "127.0.0.1"}, now.Add(time.Hour))
	renamed := token.SecureLinkConfig{Expression: "$arg_e$uri $secret", HashArg: "st", ExpiresArg: "e"}
	fresh := signLink(t, renamed, token.LinkRequest{URI: uri}, now.Add(time.Hour))
	mustStatus(t, ts.get(uri+"?"+old), 200, "before reload")
	mustStatus(t, ts.get(uri+"?"+fresh), 401, "new names before reload")

	bad := cfg
	bad.SecureLinkExpression = "$uri $secret"
	if err := reloadAuth(bad); err == nil || !strings.Contains(err.Error(), "-auth-securelink-expression") {
		t.Errorf("Reload(expression without expiry) = %v, want an error naming -auth-securelink-expression", err)
	}
	mustStatus(t, ts.get(uri+"?"+old), 200, "after a refused reload")

	next := cfg
	next.SecureLinkArgs, next.SecureLinkExpression = "$arg_st,$arg_e", renamed.Expression
	if err := reloadAuth(next); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, ts.get(uri+"?"+fresh), 200, "new names after reload")
	mustStatus(t, ts.get(uri+"?"+old), 401, "old names after reload")
}

// TestSecureLinkSettingsRefused: settings that cannot work are refused at
// start with the flag's name.
func TestSecureLinkSettingsRefused(t *testing.T) {
	for _, tt := range []struct {
		mod  func(*origin.AuthConfig)
		flag string
	}{
		{func(a *origin.AuthConfig) { a.SecureLinkExpression = "$uri$host $secret" }, "-auth-securelink-expression"},
		{func(a *origin.AuthConfig) { a.SecureLinkExpression = "$expires$1 $secret" }, "-auth-securelink-expression"},
		{func(a *origin.AuthConfig) { a.SecureLinkArgs = "md5,,expires" }, "-auth-securelink-args"},
		{func(a *origin.AuthConfig) { a.SecureLinkArgs = "" }, "-auth-securelink-args"},
		{func(a *origin.AuthConfig) { a.SecureLinkLocation = "^/(vod" }, "-auth-securelink-location"},
		{func(a *origin.AuthConfig) { a.SecureLinkExpiredStatus = 404 }, "-auth-securelink-expired-status"},
		{func(a *origin.AuthConfig) { a.CacheLifetime = "forever" }, "-auth-cache-lifetime"},
	} {
		for _, secret := range []string{"", "s3cret"} { // checked whether secure_link is on or not
			cfg := origin.DefaultConfig()
			cfg.Root = t.TempDir()
			cfg.Auth.SecureLinkSecret = secret
			tt.mod(&cfg.Auth)
			if _, err := origin.New(cfg); err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Errorf("New with a bad %s (secret %q) = %v, want an error naming it", tt.flag, secret, err)
			}
		}
	}
}

// TestQueryTokenSecureLinkForms: a playlist opened by a link over the
// User-Agent and an argument, without expiry, lists each URI under its
// directory with the argument and its own hash, which the same player
// then gets served.
func TestQueryTokenSecureLinkForms(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	form := token.SecureLinkConfig{Expression: "$uri$http_user_agent$arg_user $secret", HashArg: "h"}
	ts, _ := serverMode{}.qrServer(t, now, func(a *origin.AuthConfig) {
		a.Keys = nil
		a.SecureLinkSecret = "s3cret"
		a.SecureLinkArgs, a.SecureLinkExpression = "h", form.Expression
	})
	s, err := token.NewSecureLink(token.SecureLinkConfig{Secret: "s3cret", Expression: form.Expression, HashArg: "h"})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(uri, agent string) string {
		r := token.LinkRequest{URI: uri}
		r.Headers[0], r.Args[0] = []byte(agent), []byte("alice")
		hash, _, err := s.Sign(r, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return "user=alice&h=" + hash
	}
	ua := "User-Agent: VLC/3.0"
	r := ts.get("/vod/title42/master.m3u8?"+sign("/vod/title42/master.m3u8", "VLC/3.0"), ua)
	mustStatus(t, r, 200, "master")
	v1 := "v1/index.m3u8?" + sign("/vod/title42/v1/index.m3u8", "VLC/3.0")
	if !strings.Contains(string(r.body), "\r\n"+v1+"\r\n") {
		t.Fatalf("rewritten master lacks %q:\n%s", v1, r.body)
	}
	mustStatus(t, ts.get("/vod/title42/"+v1, ua), 200, "the URI as rewritten")
	mustStatus(t, ts.get("/vod/title42/"+v1, "User-Agent: VLC/3.1"), 403, "the URI from another player")
}
