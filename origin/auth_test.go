package origin_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/token"
)

// authServer is a plain-HTTP server with two signing keys (and a retired
// one), /public/ open, and a few files under /vod/.
func authServer(t *testing.T, now time.Time, mod func(*origin.AuthConfig)) (*testServer, map[string]token.Key) {
	t.Helper()
	return serverMode{}.authServer(t, now, mod)
}

// authServerCfg is authServer with the whole configuration to change.
func authServerCfg(t *testing.T, now time.Time, mod func(*origin.Config)) (*testServer, map[string]token.Key) {
	t.Helper()
	return serverMode{}.authServerCfg(t, now, mod)
}

// authServer is authServer in mode.
func (mode serverMode) authServer(t *testing.T, now time.Time, mod func(*origin.AuthConfig)) (*testServer, map[string]token.Key) {
	t.Helper()
	return mode.authServerCfg(t, now, func(c *origin.Config) {
		if mod != nil {
			mod(&c.Auth)
		}
	})
}

// authServerCfg is authServerCfg in mode.
func (mode serverMode) authServerCfg(t *testing.T, now time.Time, mod func(*origin.Config)) (*testServer, map[string]token.Key) {
	t.Helper()
	keys := map[string]token.Key{
		"k1":  {ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")},
		"k2":  {ID: "k2", Secret: []byte("fedcba9876543210fedcba9876543210")},
		"old": {ID: "old", Secret: []byte("retired-key-retired-key-retired!")},
	}
	ring, err := token.NewKeyring(keys["k1"], keys["k2"])
	if err != nil {
		t.Fatal(err)
	}
	ts := mode.start(t, "", func(c *origin.Config) {
		c.Now = func() time.Time { return now }
		c.Auth.Keys = ring
		c.Auth.Public = []string{"/public/"}
		mod(c)
	})
	writeFile(t, ts.root, "vod/title42/master.m3u8", "#EXTM3U\n")
	writeFile(t, ts.root, "vod/title42/v1/seg1.ts", "segment-42")
	writeFile(t, ts.root, "vod/title43/v1/seg1.ts", "segment-43")
	writeFile(t, ts.root, "public/logo.png", "png")
	return ts, keys
}

func mustSign(t *testing.T, k token.Key, c token.Claims) string {
	t.Helper()
	tok, err := token.Sign(k, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestAuthTokens: every kind of token in every carrier.
func TestAuthTokens(t *testing.T) { everyMode(t, testAuthTokens) }

func testAuthTokens(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts, keys := mode.authServer(t, now, nil)
	title := []string{"/vod/title42/*"}
	valid := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: title, KeyID: "k1"})
	flipped := []byte(valid)
	flipped[len(flipped)-1] ^= 0x01
	tokens := []struct {
		name   string
		tok    string
		path   string
		status int
	}{
		{"valid", valid, "/vod/title42/v1/seg1.ts", 200},
		{"valid playlist", valid, "/vod/title42/master.m3u8", 200},
		{"rotated key, no kid", mustSign(t, keys["k2"], token.Claims{Expiry: now.Add(time.Hour), ACL: title}), "/vod/title42/v1/seg1.ts", 200},
		{"rotated key, kid", mustSign(t, keys["k2"], token.Claims{Expiry: now.Add(time.Hour), ACL: title, KeyID: "k2"}), "/vod/title42/v1/seg1.ts", 200},
		{"within skew after expiry", mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(-10 * time.Second), ACL: title}), "/vod/title42/v1/seg1.ts", 200},
		{"expired", mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(-time.Hour), ACL: title}), "/vod/title42/v1/seg1.ts", 403},
		{"not yet valid", mustSign(t, keys["k1"], token.Claims{Start: now.Add(time.Hour), Expiry: now.Add(2 * time.Hour), ACL: title}), "/vod/title42/v1/seg1.ts", 403},
		{"wrong scope", valid, "/vod/title43/v1/seg1.ts", 403},
		{"prefix escape", valid, "/vod/title42/../title43/v1/seg1.ts", 403},
		{"exact-path scope elsewhere", mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/vod/title42/master.m3u8"}}), "/vod/title42/v1/seg1.ts", 403},
		{"wrong ip", mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: title, IP: "192.0.2.7"}), "/vod/title42/v1/seg1.ts", 403},
		{"right ip", mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: title, IP: "127.0.0.1"}), "/vod/title42/v1/seg1.ts", 200},
		{"retired key", mustSign(t, keys["old"], token.Claims{Expiry: now.Add(time.Hour), ACL: title}), "/vod/title42/v1/seg1.ts", 403},
		{"unknown kid", mustSign(t, keys["old"], token.Claims{Expiry: now.Add(time.Hour), ACL: title, KeyID: "old"}), "/vod/title42/v1/seg1.ts", 403},
		{"truncated", valid[:len(valid)-9], "/vod/title42/v1/seg1.ts", 403},
		{"bit flipped", string(flipped), "/vod/title42/v1/seg1.ts", 403},
		{"garbage", "hello", "/vod/title42/v1/seg1.ts", 403},
	}
	carriers := []struct {
		name string
		req  func(tok, path string) (target string, hdrs []string)
	}{
		{"path", func(tok, path string) (string, []string) { return "/t/" + token.PathSegment(tok) + path, nil }},
		{"query", func(tok, path string) (string, []string) { return path + "?token=" + url.QueryEscape(tok), nil }},
		{"cookie", func(tok, path string) (string, []string) {
			return path, []string{"Cookie: segorigin_token=" + token.PathSegment(tok)}
		}},
		{"bearer", func(tok, path string) (string, []string) { return path, []string{"Authorization: Bearer " + tok} }},
	}
	c := ts.dial()
	for _, cr := range carriers {
		for _, tt := range tokens {
			t.Run(cr.name+"/"+tt.name, func(t *testing.T) {
				target, hdrs := cr.req(tt.tok, tt.path)
				r := c.do("GET", target, hdrs...)
				mustStatus(t, r, tt.status, cr.name+" "+tt.name)
				if tt.status == 403 && strings.Contains(string(r.body), "segment") {
					t.Errorf("403 body leaks content: %q", r.body)
				}
			})
		}
	}
	st := ts.srv.Stats().Auth
	expired, scope, signature := st.ByReason[origin.AuthExpired], st.ByReason[origin.AuthScope], st.ByReason[origin.AuthSignature]
	if expired != 4 || scope < 8 || signature < 4 {
		t.Errorf("auth counters: expired %d, scope %d, signature %d", expired, scope, signature)
	}
}

func TestAuthMissingAndPublic(t *testing.T) { everyMode(t, testAuthMissingAndPublic) }

func testAuthMissingAndPublic(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts, _ := mode.authServer(t, now, nil)
	r := ts.get("/vod/title42/master.m3u8")
	mustStatus(t, r, 401, "no token")
	mustHeader(t, r, "WWW-Authenticate", `Bearer realm="segorigin"`, "no token")
	mustHeader(t, r, "Access-Control-Allow-Origin", "*", "no token")
	mustStatus(t, ts.get("/public/logo.png"), 200, "public prefix")

	ts403, _ := mode.authServer(t, now, func(a *origin.AuthConfig) { a.MissingStatus = 403 })
	mustStatus(t, ts403.get("/vod/title42/master.m3u8"), 403, "no token, 403 configured")
}

// TestAuthSecureLink: nginx secure_link tokens, for migrations.
func TestAuthSecureLink(t *testing.T) { everyMode(t, testAuthSecureLink) }

func testAuthSecureLink(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts, _ := mode.authServer(t, now, func(a *origin.AuthConfig) {
		a.Keys = nil
		a.SecureLinkSecret = "s3cret"
	})
	hash, exp, err := token.SignSecureLink("s3cret", "$expires$uri$remote_addr $secret", "/vod/title42/master.m3u8", "127.0.0.1", now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, ts.get("/vod/title42/master.m3u8?md5="+hash+"&expires="+exp), 200, "secure_link valid")
	mustStatus(t, ts.get("/vod/title42/v1/seg1.ts?md5="+hash+"&expires="+exp), 403, "secure_link other uri")
	mustStatus(t, ts.get("/vod/title42/master.m3u8"), 401, "secure_link missing")
}
