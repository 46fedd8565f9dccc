package token

import (
	"errors"
	"testing"
	"time"
)

// nginxHash is nginx's own documentation example, recomputed here:
//
//	printf '%s' "2147483647/s/link127.0.0.1 secret" |
//	  openssl md5 -binary | openssl base64 | tr +/ -_ | tr -d =
const nginxHash = "_e4Nc3iduzkWRm01TBBNYw"

// The other forms' vectors, computed the same way over the text shown.
const (
	captureHash = "eTN3KStHfOU79R4MD6G5OA" // "2147483647title42 secret": $secure_link_expires$1 with ^/vod/([^/]+)/
	agentHash   = "Wn43s0utpr-cwE-q76qWIw" // "2147483647/s/linkVLC/3.0 secret": ...$uri$http_user_agent
	foreverHash = "-Nb69Gm-rFFa4FHMWh4iMQ" // "/s/link secret": no expiry
	argHash     = "GP1yVOLh1GtIlNobsZq7zg" // "2147483647/s/linkalice secret": ...$uri$arg_user
)

// documented is nginx's documentation's configuration.
var documented = SecureLinkConfig{Secret: "secret", Expression: "$secure_link_expires$uri$remote_addr $secret", HashArg: "md5", ExpiresArg: "expires"}

func mustSecureLink(t testing.TB, c SecureLinkConfig) *SecureLinkVerifier {
	t.Helper()
	s, err := NewSecureLink(c)
	if err != nil {
		t.Fatalf("NewSecureLink(%+v) = %v", c, err)
	}
	return s
}

// linkReq is a request for uri with the query and User-Agent given.
func linkReq(s *SecureLinkVerifier, query, uri, addr, agent string) *LinkRequest {
	r := &LinkRequest{URI: uri, RemoteAddr: addr}
	s.FromQuery(r, []byte(query))
	for i, h := range s.Headers() {
		if h == "User-Agent" && agent != "" {
			r.Headers[i] = []byte(agent)
		}
	}
	return r
}

func TestSecureLinkVerify(t *testing.T) {
	s := mustSecureLink(t, documented)
	expiry := time.Unix(2147483647, 0)
	tests := []struct {
		name             string
		query, uri, addr string
		now              time.Time
		want             error
	}{
		{"nginx vector", "md5=" + nginxHash + "&expires=2147483647", "/s/link", "127.0.0.1", t0, nil},
		{"at expiry", "md5=" + nginxHash + "&expires=2147483647", "/s/link", "127.0.0.1", expiry, nil},
		{"expired", "md5=" + nginxHash + "&expires=2147483647", "/s/link", "127.0.0.1", expiry.Add(time.Second), ErrExpired},
		{"padded", "md5=" + nginxHash + "==&expires=2147483647", "/s/link", "127.0.0.1", t0, nil},
		{"names without case", "MD5=" + nginxHash + "&Expires=2147483647", "/s/link", "127.0.0.1", t0, nil},
		{"first of two", "md5=" + nginxHash + "&md5=x&expires=2147483647", "/s/link", "127.0.0.1", t0, nil},
		{"other uri", "md5=" + nginxHash + "&expires=2147483647", "/s/link2", "127.0.0.1", t0, ErrSignature},
		{"other addr", "md5=" + nginxHash + "&expires=2147483647", "/s/link", "127.0.0.2", t0, ErrSignature},
		{"other expiry", "md5=" + nginxHash + "&expires=2147483646", "/s/link", "127.0.0.1", t0, ErrSignature},
		{"leading zero expiry", "md5=" + nginxHash + "&expires=02147483647", "/s/link", "127.0.0.1", t0, ErrSignature},
		{"raw uri", "md5=" + nginxHash + "&expires=2147483647", "/s/x/../link", "127.0.0.1", t0, ErrScope},
		{"no expiry", "md5=" + nginxHash, "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"zero expiry", "md5=" + nginxHash + "&expires=0", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"negative expiry", "md5=" + nginxHash + "&expires=-1", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"encoded hash", "md5=" + nginxHash[:21] + "%77&expires=2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"short hash", "md5=" + nginxHash[1:] + "&expires=2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"long hash", "md5=" + nginxHash + "A&expires=2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"very long hash", "md5=" + nginxHash + nginxHash + "&expires=2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"std alphabet", "md5=/e4Nc3iduzkWRm01TBBNYw&expires=2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"stray bits", "md5=" + nginxHash[:21] + "x&expires=2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"empty hash", "md5=&expires=2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Verify(linkReq(s, tt.query, tt.uri, tt.addr, ""), tt.now)
			if !sameErr(err, tt.want) {
				t.Errorf("Verify(%q, %q, %q) = %v, want %v", tt.query, tt.uri, tt.addr, err, tt.want)
			}
		})
	}
	other := documented
	other.Secret = "secreT"
	o := mustSecureLink(t, other)
	if _, err := o.Verify(linkReq(o, "md5="+nginxHash+"&expires=2147483647", "/s/link", "127.0.0.1", ""), t0); !errors.Is(err, ErrSignature) {
		t.Errorf("Verify(other secret) = %v, want %v", err, ErrSignature)
	}
	if !raceEnabled {
		r := linkReq(s, "md5="+nginxHash+"&expires=2147483647", "/s/link", "127.0.0.1", "")
		if got := testing.AllocsPerRun(100, func() { _, _ = s.Verify(r, t0) }); got != 0 {
			t.Errorf("AllocsPerRun(SecureLinkVerifier.Verify) = %v, want 0", got)
		}
	}
}

// TestSecureLinkForms: each form nginx's secure_link takes, with vectors
// computed apart from this code (openssl, above).
func TestSecureLinkForms(t *testing.T) {
	tests := []struct {
		name                    string
		cfg                     SecureLinkConfig
		query, uri, addr, agent string
		now                     time.Time
		want                    error
		expiry                  int64
	}{
		{"capture", SecureLinkConfig{Expression: "$secure_link_expires$1 $secret", Location: `^/vod/([^/]+)/`},
			"md5=" + captureHash + "&expires=2147483647", "/vod/title42/v1/seg1.ts", "", "", t0, nil, 2147483647},
		{"capture: another file of the title", SecureLinkConfig{Expression: "$secure_link_expires$1 $secret", Location: `^/vod/([^/]+)/`},
			"md5=" + captureHash + "&expires=2147483647", "/vod/title42/master.m3u8", "", "", t0, nil, 2147483647},
		{"capture: another title", SecureLinkConfig{Expression: "$secure_link_expires$1 $secret", Location: `^/vod/([^/]+)/`},
			"md5=" + captureHash + "&expires=2147483647", "/vod/title43/master.m3u8", "", "", t0, ErrSignature, 0},
		{"capture: outside the location", SecureLinkConfig{Expression: "$secure_link_expires$1 $secret", Location: `^/vod/([^/]+)/`},
			"md5=" + captureHash + "&expires=2147483647", "/live/title42/master.m3u8", "", "", t0, ErrScope, 0},
		{"user agent", SecureLinkConfig{Expression: "$secure_link_expires$uri$http_user_agent $secret"},
			"md5=" + agentHash + "&expires=2147483647", "/s/link", "", "VLC/3.0", t0, nil, 2147483647},
		{"user agent: another", SecureLinkConfig{Expression: "$secure_link_expires$uri$http_user_agent $secret"},
			"md5=" + agentHash + "&expires=2147483647", "/s/link", "", "VLC/3.1", t0, ErrSignature, 0},
		{"no expiry", SecureLinkConfig{Expression: "$uri $secret", ExpiresArg: "-"},
			"md5=" + foreverHash, "/s/link", "", "", time.Unix(1<<40, 0), nil, 0},
		{"no expiry: expires= ignored", SecureLinkConfig{Expression: "$uri $secret", ExpiresArg: "-"},
			"md5=" + foreverHash + "&expires=1", "/s/link", "", "", t0, nil, 0},
		{"arg", SecureLinkConfig{Expression: "$secure_link_expires$uri$arg_user $secret"},
			"user=alice&md5=" + argHash + "&expires=2147483647", "/s/link", "", "", t0, nil, 2147483647},
		{"arg: another value", SecureLinkConfig{Expression: "$secure_link_expires$uri$arg_user $secret"},
			"user=bob&md5=" + argHash + "&expires=2147483647", "/s/link", "", "", t0, ErrSignature, 0},
		{"arg names", SecureLinkConfig{Expression: "$arg_e$uri$remote_addr $secret", HashArg: "st", ExpiresArg: "e"},
			"st=" + nginxHash + "&e=2147483647", "/s/link", "127.0.0.1", "", t0, nil, 2147483647},
		{"arg names: the defaults are not read", SecureLinkConfig{Expression: "$arg_e$uri$remote_addr $secret", HashArg: "st", ExpiresArg: "e"},
			"md5=" + nginxHash + "&expires=2147483647&e=2147483647", "/s/link", "127.0.0.1", "", t0, ErrMalformed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			c.Secret = "secret"
			c.HashArg = cmpOr(c.HashArg, "md5")
			if c.ExpiresArg = cmpOr(c.ExpiresArg, "expires"); c.ExpiresArg == "-" {
				c.ExpiresArg = ""
			}
			s := mustSecureLink(t, c)
			exp, err := s.Verify(linkReq(s, tt.query, tt.uri, tt.addr, tt.agent), tt.now)
			if !sameErr(err, tt.want) || (err == nil && exp != tt.expiry) {
				t.Errorf("Verify(%q, %q) = %d, %v, want %d, %v", tt.query, tt.uri, exp, err, tt.expiry, tt.want)
			}
		})
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestSecureLinkSign(t *testing.T) {
	for _, expr := range []string{
		"$expires$uri$remote_addr $secret",
		"$secure_link_expires$uri$remote_addr $secret",
		"${expires}${uri}${remote_addr} ${secret}",
		"$arg_expires$uri$remote_addr $secret",
		"$Secure_Link_Expires$URI$remote_addr $secret",
	} {
		hash, exp, err := SignSecureLink("secret", expr, "/s/link", "127.0.0.1", time.Unix(2147483647, 0))
		if err != nil || hash != nginxHash || exp != "2147483647" {
			t.Errorf("SignSecureLink(%q) = %q, %q, %v, want %q, %q", expr, hash, exp, err, nginxHash, "2147483647")
		}
	}
	s := mustSecureLink(t, SecureLinkConfig{Secret: "k", Expression: "$uri|$expires|$secret", HashArg: "md5", ExpiresArg: "expires"})
	hash, exp, err := s.Sign(LinkRequest{URI: "/vod/a.ts"}, tExp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(linkReq(s, "md5="+hash+"&expires="+exp, "/vod/a.ts", "192.0.2.9", ""), t0); err != nil {
		t.Errorf("Verify(Sign()) = %v, want <nil> (expression without $remote_addr ignores it)", err)
	}
	if _, _, err := s.Sign(LinkRequest{URI: "/vod/../a.ts"}, tExp); err == nil {
		t.Errorf("Sign(raw uri) = nil error, want an error")
	}
	if _, _, err := s.Sign(LinkRequest{URI: "/vod/a.ts"}, time.Unix(0, 0)); err == nil {
		t.Errorf("Sign(expiry 1970) = nil error, want an error")
	}
	loc := mustSecureLink(t, SecureLinkConfig{Secret: "k", Expression: "$1$secret", HashArg: "md5", Location: "^/vod/(.*)/"})
	if _, _, err := loc.Sign(LinkRequest{URI: "/live/a.ts"}, time.Time{}); err == nil {
		t.Errorf("Sign(outside the location) = nil error, want an error")
	}
	if hash, exp, err := loc.Sign(LinkRequest{URI: "/vod/t/a.ts"}, time.Time{}); err != nil || exp != "" || hash == "" {
		t.Errorf("Sign(no expiry) = %q, %q, %v, want a hash, no expiry", hash, exp, err)
	}
}

func TestNewSecureLink(t *testing.T) {
	tests := []struct {
		name, secret, expr, hash, exp, loc string
		ok                                 bool
	}{
		{"nginx", "s", "$expires$uri$remote_addr $secret", "md5", "expires", "", true},
		{"braces", "s", "${uri}:${expires}:${secret}", "md5", "expires", "", true},
		{"headers", "s", "$expires$uri$http_user_agent$http_x_viewer $secret", "md5", "expires", "", true},
		{"capture without uri", "s", "$expires$2 $secret", "md5", "expires", "^/(a)/(b)/", true},
		{"no expiry", "s", "$uri $secret", "md5", "", "", true},
		{"empty secret", "", "$expires$uri$secret", "md5", "expires", "", false},
		{"no expires", "s", "$uri$remote_addr $secret", "md5", "expires", "", false},
		{"expires without expiry", "s", "$expires$uri $secret", "md5", "", "", false},
		{"no uri", "s", "$expires$remote_addr $secret", "md5", "expires", "", false},
		{"secret as literal", "s", "$expires$uri$remote_addr secret", "md5", "expires", "", false},
		{"unknown variable", "s", "$expires$uri$host$secret", "md5", "expires", "", false},
		{"variable run-on", "s", "$expires$uri_x$secret", "md5", "expires", "", false},
		{"lone dollar", "s", "$expires$uri$secret $", "md5", "expires", "", false},
		{"unclosed brace", "s", "$expires$uri${secret", "md5", "expires", "", false},
		{"empty http_", "s", "$expires$uri$http_$secret", "md5", "expires", "", false},
		{"hash in expression", "s", "$expires$uri$arg_md5$secret", "md5", "expires", "", false},
		{"capture without location", "s", "$expires$1$secret", "md5", "expires", "", false},
		{"capture beyond location", "s", "$expires$2$secret", "md5", "expires", "^/(a)/", false},
		{"bad location", "s", "$expires$uri$secret", "md5", "expires", "^/(a/", false},
		{"same arg names", "s", "$expires$uri$secret", "md5", "MD5", "", false},
		{"bad arg name", "s", "$expires$uri$secret", "md-5", "expires", "", false},
		{"no hash arg", "s", "$expires$uri$secret", "", "expires", "", false},
		{"too many headers", "s", "$uri$expires$secret$http_a$http_b$http_c$http_d$http_e$http_f$http_g$http_h$http_i", "md5", "expires", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSecureLink(SecureLinkConfig{Secret: tt.secret, Expression: tt.expr, HashArg: tt.hash, ExpiresArg: tt.exp, Location: tt.loc})
			if (err == nil) != tt.ok {
				t.Errorf("NewSecureLink(%q, %q) = %v, want ok=%v", tt.secret, tt.expr, err, tt.ok)
			}
		})
	}
}

func TestQueryArg(t *testing.T) {
	tests := []struct {
		query, name string
		want        string
		found       bool
	}{
		{"md5=a&expires=1", "md5", "a", true},
		{"md5=a&expires=1", "expires", "1", true},
		{"MD5=a", "md5", "a", true},
		{"xmd5=a&md5=b", "md5", "b", true},
		{"md5&md5=b", "md5", "b", true},
		{"md5=%41", "md5", "%41", true},
		{"md5=a;expires=1", "expires", "", false},
		{"md5=", "md5", "", true},
		{"", "md5", "", false},
	}
	for _, tt := range tests {
		got := QueryArg([]byte(tt.query), tt.name)
		if string(got) != tt.want || (got != nil) != tt.found {
			t.Errorf("QueryArg(%q, %q) = %q (found %v), want %q (found %v)", tt.query, tt.name, got, got != nil, tt.want, tt.found)
		}
	}
}
