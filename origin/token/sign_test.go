package token

import (
	"strings"
	"testing"
	"time"
)

func TestSign(t *testing.T) {
	base := Claims{Start: t0, Expiry: tExp, ACL: []string{"/vod/title42/*"}}
	with := func(f func(*Claims)) Claims {
		c := base
		c.ACL = append([]string(nil), base.ACL...)
		f(&c)
		return c
	}
	tests := []struct {
		name string
		key  Key
		c    Claims
		want string // the token without "~hmac=...", or "" for an error
	}{
		{"full", key1, with(func(c *Claims) { c.IP = "192.0.2.1"; c.KeyID = "k1"; c.ACL = append(c.ACL, "/live/x.m3u8") }),
			"ip=192.0.2.1~st=1700000000~exp=1700003600~acl=/vod/title42/*!/live/x.m3u8~kid=k1"},
		{"minimal", key1, with(func(c *Claims) { c.Start = time.Time{} }), "exp=1700003600~acl=/vod/title42/*"},
		{"ip canonical", key1, with(func(c *Claims) { c.IP = "2001:0db8:0::1" }), "ip=2001:db8::1~st=1700000000~exp=1700003600~acl=/vod/title42/*"},
		{"subsecond truncated", key1, with(func(c *Claims) { c.Expiry = tExp.Add(999 * time.Millisecond) }), "st=1700000000~exp=1700003600~acl=/vod/title42/*"},

		{"no secret", Key{ID: "k1"}, base, ""},
		{"kid mismatch", key1, with(func(c *Claims) { c.KeyID = "k2" }), ""},
		{"no expiry", key1, with(func(c *Claims) { c.Expiry = time.Time{} }), ""},
		{"expiry before 1970", key1, with(func(c *Claims) { c.Start = time.Time{}; c.Expiry = time.Unix(-5, 0) }), ""},
		{"start equals expiry", key1, with(func(c *Claims) { c.Start = tExp }), ""},
		{"start after expiry", key1, with(func(c *Claims) { c.Start = tExp.Add(time.Second) }), ""},
		{"no acl", key1, with(func(c *Claims) { c.ACL = nil }), ""},
		{"empty pattern", key1, with(func(c *Claims) { c.ACL = []string{"/a", ""} }), ""},
		{"bang in pattern", key1, with(func(c *Claims) { c.ACL = []string{"/a!b"} }), ""},
		{"tilde in pattern", key1, with(func(c *Claims) { c.ACL = []string{"/a~b"} }), ""},
		{"space in pattern", key1, with(func(c *Claims) { c.ACL = []string{"/a b"} }), ""},
		{"bad ip", key1, with(func(c *Claims) { c.IP = "192.0.2.1:80" }), ""},
		{"ip with zone", key1, with(func(c *Claims) { c.IP = "fe80::1%eth0" }), ""},
		{"too long", key1, with(func(c *Claims) { c.ACL = []string{"/" + strings.Repeat("a", MaxTokenLen)} }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Sign(tt.key, tt.c)
			if tt.want == "" {
				if err == nil {
					t.Errorf("Sign(%+v) = %q, want an error", tt.c, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Sign(%+v) = %v, want %q", tt.c, err, tt.want)
			}
			if want := signRaw(tt.key, tt.want); got != want {
				t.Errorf("Sign(%+v) = %q, want %q", tt.c, got, want)
			}
		})
	}
}
