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

func TestSecureLinkVerify(t *testing.T) {
	s, err := NewSecureLink("secret", "$expires$uri$remote_addr $secret")
	if err != nil {
		t.Fatal(err)
	}
	expiry := time.Unix(2147483647, 0)
	tests := []struct {
		name                     string
		hash, expires, uri, addr string
		now                      time.Time
		want                     error
	}{
		{"nginx vector", nginxHash, "2147483647", "/s/link", "127.0.0.1", t0, nil},
		{"at expiry", nginxHash, "2147483647", "/s/link", "127.0.0.1", expiry, nil},
		{"expired", nginxHash, "2147483647", "/s/link", "127.0.0.1", expiry.Add(time.Second), ErrExpired},
		{"padded", nginxHash + "==", "2147483647", "/s/link", "127.0.0.1", t0, nil},
		{"other uri", nginxHash, "2147483647", "/s/link2", "127.0.0.1", t0, ErrSignature},
		{"other addr", nginxHash, "2147483647", "/s/link", "127.0.0.2", t0, ErrSignature},
		{"other expiry", nginxHash, "2147483646", "/s/link", "127.0.0.1", t0, ErrSignature},
		{"leading zero expiry", nginxHash, "02147483647", "/s/link", "127.0.0.1", t0, ErrSignature},
		{"raw uri", nginxHash, "2147483647", "/s/x/../link", "127.0.0.1", t0, ErrScope},
		{"no expiry", nginxHash, "", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"zero expiry", nginxHash, "0", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"negative expiry", nginxHash, "-1", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"short hash", nginxHash[1:], "2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"long hash", nginxHash + "A", "2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"std alphabet", "/e4Nc3iduzkWRm01TBBNYw", "2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"stray bits", nginxHash[:21] + "x", "2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
		{"empty hash", "", "2147483647", "/s/link", "127.0.0.1", t0, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Verify(tt.hash, tt.expires, tt.uri, tt.addr, tt.now)
			if !sameErr(err, tt.want) {
				t.Errorf("Verify(%q, %q, %q, %q) = %v, want %v", tt.hash, tt.expires, tt.uri, tt.addr, err, tt.want)
			}
		})
	}
	other, _ := NewSecureLink("secreT", "$expires$uri$remote_addr $secret")
	if err := other.Verify(nginxHash, "2147483647", "/s/link", "127.0.0.1", t0); !errors.Is(err, ErrSignature) {
		t.Errorf("Verify(other secret) = %v, want %v", err, ErrSignature)
	}
	if !raceEnabled {
		if got := testing.AllocsPerRun(100, func() { _ = s.Verify(nginxHash, "2147483647", "/s/link", "127.0.0.1", t0) }); got != 0 {
			t.Errorf("AllocsPerRun(SecureLinkVerifier.Verify) = %v, want 0", got)
		}
	}
}

func TestSecureLinkSign(t *testing.T) {
	for _, expr := range []string{
		"$expires$uri$remote_addr $secret",
		"$secure_link_expires$uri$remote_addr $secret",
		"${expires}${uri}${remote_addr} ${secret}",
	} {
		hash, exp, err := SignSecureLink("secret", expr, "/s/link", "127.0.0.1", time.Unix(2147483647, 0))
		if err != nil || hash != nginxHash || exp != "2147483647" {
			t.Errorf("SignSecureLink(%q) = %q, %q, %v, want %q, %q", expr, hash, exp, err, nginxHash, "2147483647")
		}
	}
	s, _ := NewSecureLink("k", "$uri|$expires|$secret")
	hash, exp, err := s.Sign("/vod/a.ts", "", tExp)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(hash, exp, "/vod/a.ts", "192.0.2.9", t0); err != nil {
		t.Errorf("Verify(Sign()) = %v, want <nil> (expression without $remote_addr ignores it)", err)
	}
	if _, _, err := s.Sign("/vod/../a.ts", "", tExp); err == nil {
		t.Errorf("Sign(raw uri) = nil error, want an error")
	}
	if _, _, err := s.Sign("/vod/a.ts", "", time.Unix(0, 0)); err == nil {
		t.Errorf("Sign(expiry 1970) = nil error, want an error")
	}
}

func TestNewSecureLink(t *testing.T) {
	tests := []struct {
		name, secret, expr string
		ok                 bool
	}{
		{"nginx", "s", "$expires$uri$remote_addr $secret", true},
		{"braces", "s", "${uri}:${expires}:${secret}", true},
		{"empty secret", "", "$expires$uri$secret", false},
		{"no expires", "s", "$uri$remote_addr $secret", false},
		{"no uri", "s", "$expires$remote_addr $secret", false},
		{"secret as literal", "s", "$expires$uri$remote_addr secret", false},
		{"unknown variable", "s", "$expires$uri$host$secret", false},
		{"variable run-on", "s", "$expires$uri_x$secret", false},
		{"lone dollar", "s", "$expires$uri$secret $", false},
		{"unclosed brace", "s", "$expires$uri${secret", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSecureLink(tt.secret, tt.expr)
			if (err == nil) != tt.ok {
				t.Errorf("NewSecureLink(%q, %q) = %v, want ok=%v", tt.secret, tt.expr, err, tt.ok)
			}
		})
	}
}
