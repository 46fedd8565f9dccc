package origin_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/token"
)

// TestErrorCacheControl: every error carries the Cache-Control chosen for
// its status, so a CDN's default negative caching never decides.
func TestErrorCacheControl(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, custom := range []bool{false, true} {
		ts, _ := authServer(t, now, nil)
		if custom {
			ts, _ = authServerCfg(t, now, func(c *origin.Config) {
				c.CacheControlNotFound = "public, max-age=30"
				c.CacheControlDenied = "private, max-age=0"
				c.CacheControlRange = "max-age=1"
				c.CacheControlClientError = ""
			})
		}
		c := ts.dial()
		want := map[string]string{"404": "max-age=10", "401": "no-store", "403": "no-store", "416": "no-store", "400": "no-store", "405": "no-store"}
		if custom {
			want = map[string]string{"404": "public, max-age=30", "401": "private, max-age=0", "403": "private, max-age=0", "416": "max-age=1", "400": "", "405": ""}
		}
		for _, tt := range []struct {
			code, method, target string
			hdrs                 []string
		}{
			{"404", "GET", "/public/missing.png", nil},
			{"401", "GET", "/vod/title42/master.m3u8", nil},
			{"403", "GET", "/vod/title42/master.m3u8?token=garbage", nil},
			{"416", "GET", "/public/logo.png", []string{"Range: bytes=100-"}},
			{"400", "GET", "/public/%00", nil},
			{"405", "POST", "/public/logo.png", []string{"Content-Length: 0"}},
		} {
			r := c.do(tt.method, tt.target, tt.hdrs...)
			if got := strconv.Itoa(r.StatusCode); got != tt.code {
				t.Fatalf("custom=%v %s %s: status %s, want %s", custom, tt.method, tt.target, got, tt.code)
			}
			mustHeader(t, r, "Cache-Control", want[tt.code], tt.method+" "+tt.target)
		}
	}
}

// TestTokenCapsCacheLifetime: with -auth-cache-lifetime token (the
// default), a response authorised by a token is never fresh in any cache
// for longer than the token stays valid; with configured, one whose
// token the URL carries keeps the kind's Cache-Control. Either way, one
// authorised by a token the URL does not carry is private and capped.
func TestTokenCapsCacheLifetime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, lifetime := range []string{origin.CacheLifetimeToken, origin.CacheLifetimeConfigured} {
		t.Run(lifetime, func(t *testing.T) { testTokenCacheLifetime(t, now, lifetime) })
	}
}

func testTokenCacheLifetime(t *testing.T, now time.Time, lifetime string) {
	ts, keys := authServer(t, now, func(a *origin.AuthConfig) { a.CacheLifetime = lifetime })
	title := []string{"/vod/title42/*"}
	minute := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Minute), ACL: title})
	inSkew := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(-10 * time.Second), ACL: title})
	day := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(24 * time.Hour), ACL: title})
	const segment, playlist = "public, max-age=31536000, immutable", "public, max-age=10"
	c := ts.dial()
	for _, tt := range []struct {
		name, target   string
		hdrs           []string
		want, wantConf string // Cache-Control with lifetime token, configured
	}{
		{"path carrier, segment", "/t/" + token.PathSegment(minute) + "/vod/title42/v1/seg1.ts", nil, "public, max-age=60", segment},
		{"path carrier, playlist shorter than token", "/t/" + token.PathSegment(minute) + "/vod/title42/master.m3u8", nil, playlist, playlist},
		{"path carrier, day token", "/t/" + token.PathSegment(day) + "/vod/title42/v1/seg1.ts", nil, "public, max-age=86400", segment},
		{"query carrier", "/vod/title42/v1/seg1.ts?token=" + url.QueryEscape(minute), nil, "public, max-age=60", segment},
		{"expired within skew", "/vod/title42/v1/seg1.ts?token=" + url.QueryEscape(inSkew), nil, "public, max-age=0", segment},
		{"cookie carrier", "/vod/title42/v1/seg1.ts", []string{"Cookie: segorigin_token=" + token.PathSegment(minute)}, "private, max-age=60", "private, max-age=60"},
		{"bearer carrier", "/vod/title42/v1/seg1.ts", []string{"Authorization: Bearer " + minute}, "private, max-age=60", "private, max-age=60"},
		{"public path, no token", "/public/logo.png", nil, segment, segment},
	} {
		want := tt.want
		if lifetime == origin.CacheLifetimeConfigured {
			want = tt.wantConf
		}
		r := c.do("GET", tt.target, tt.hdrs...)
		mustStatus(t, r, 200, tt.name)
		mustHeader(t, r, "Cache-Control", want, tt.name)
		// RFC 9110 §15.4.5: the 304 carries the Cache-Control the 200 would.
		r304 := c.do("GET", tt.target, append(tt.hdrs, "If-None-Match: "+r.header("ETag"))...)
		mustStatus(t, r304, 304, tt.name+", revalidated")
		mustHeader(t, r304, "Cache-Control", want, tt.name+", 304")
	}
}

// TestSecureLinkCapsCacheLifetime: expires= bounds the lifetime as exp= does.
func TestSecureLinkCapsCacheLifetime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts, _ := authServer(t, now, func(a *origin.AuthConfig) {
		a.Keys = nil
		a.SecureLinkSecret = "s3cret"
	})
	hash, exp, err := token.SignSecureLink("s3cret", "$expires$uri$remote_addr $secret", "/vod/title42/v1/seg1.ts", "127.0.0.1", now.Add(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r := ts.get("/vod/title42/v1/seg1.ts?md5=" + hash + "&expires=" + exp)
	mustStatus(t, r, 200, "secure_link")
	mustHeader(t, r, "Cache-Control", "public, max-age=90", "secure_link")

	conf, _ := authServer(t, now, func(a *origin.AuthConfig) {
		a.Keys = nil
		a.SecureLinkSecret = "s3cret"
		a.CacheLifetime = origin.CacheLifetimeConfigured
	})
	r = conf.get("/vod/title42/v1/seg1.ts?md5=" + hash + "&expires=" + exp)
	mustStatus(t, r, 200, "secure_link, lifetime configured")
	mustHeader(t, r, "Cache-Control", "public, max-age=31536000, immutable", "secure_link, lifetime configured")

	// A link without expiry has no lifetime to cap.
	forever, _ := authServer(t, now, func(a *origin.AuthConfig) {
		a.Keys = nil
		a.SecureLinkSecret = "s3cret"
		a.SecureLinkArgs = "md5"
		a.SecureLinkExpression = "$uri $secret"
	})
	s, err := token.NewSecureLink(token.SecureLinkConfig{Secret: "s3cret", Expression: "$uri $secret", HashArg: "md5"})
	if err != nil {
		t.Fatal(err)
	}
	hash, _, err = s.Sign(token.LinkRequest{URI: "/vod/title42/v1/seg1.ts"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	r = forever.get("/vod/title42/v1/seg1.ts?md5=" + hash)
	mustStatus(t, r, 200, "secure_link without expiry")
	mustHeader(t, r, "Cache-Control", "public, max-age=31536000, immutable", "secure_link without expiry")
}

// TestOperatorHeaders: -header kind:Name: value lands on that kind only.
func TestOperatorHeaders(t *testing.T) {
	var rules []origin.HeaderRule
	for _, s := range []string{"segment:X-Seg: s", "playlist:X-Pl: p", "error:X-Err: e", "all:X-All: a b"} {
		r, err := origin.ParseHeaderRule(s)
		if err != nil {
			t.Fatalf("ParseHeaderRule(%q): %v", s, err)
		}
		rules = append(rules, r)
	}
	ts := startServer(t, "", func(c *origin.Config) { c.Headers = rules })
	writeFile(t, ts.root, "a.m3u8", "#EXTM3U\n")
	writeFile(t, ts.root, "a.ts", "ts")
	c := ts.dial()
	seg := c.do("GET", "/a.ts")
	for _, tt := range []struct {
		what string
		r    *response
		want map[string]string
	}{
		{"segment", seg, map[string]string{"X-Seg": "s", "X-Pl": "", "X-Err": "", "X-All": "a b"}},
		{"segment 304", c.do("GET", "/a.ts", "If-None-Match: "+seg.header("ETag")), map[string]string{"X-Seg": "s", "X-All": "a b"}},
		{"playlist", c.do("GET", "/a.m3u8"), map[string]string{"X-Seg": "", "X-Pl": "p", "X-All": "a b"}},
		{"404", c.do("GET", "/nope.ts"), map[string]string{"X-Seg": "", "X-Err": "e", "X-All": "a b"}},
	} {
		for k, v := range tt.want {
			mustHeader(t, tt.r, k, v, tt.what)
		}
	}
}

func TestHeaderRuleRefused(t *testing.T) {
	for _, s := range []string{
		"segment:Content-Length: 1", "all:Cache-Control: max-age=1", "all:Access-Control-Allow-Origin: *",
		"nokind:X-A: 1", "segment:X A: 1", "segment:X-A", "X-A: 1", "segment:X-A: a\x01b",
	} {
		if _, err := origin.ParseHeaderRule(s); err == nil {
			t.Errorf("ParseHeaderRule(%q) = nil error, want refused", s)
		}
	}
	cfg := origin.DefaultConfig()
	cfg.Root = t.TempDir()
	cfg.Headers = []origin.HeaderRule{{Kind: "all", Name: "ETag", Value: "x"}}
	if _, err := origin.New(cfg); err == nil || !strings.Contains(err.Error(), "ETag") {
		t.Errorf("New with an ETag operator header: err = %v, want refused", err)
	}
}
