package token

import (
	"errors"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	mac := opensslToken[len(opensslToken)-64:]
	redacted := "st=1700000000~exp=1700003600~acl=/vod/title42/*~kid=k1~hmac=redacted"
	tests := []struct {
		name, tok, want string
	}{
		{"token", opensslToken, redacted},
		{"segment form", PathSegment(opensslToken), redacted},
		{"hmac not last", "hmac=" + mac + "~exp=1", "hmac=redacted~exp=1"},
		{"upper case name", "exp=1~HMAC=" + mac, "exp=1~HMAC=redacted"},
		{"no hmac", "exp=1~acl=/*", "exp=1~acl=/*"},
		{"empty", "", ""},
		{"value mentions hmac=", "data=hmac=x~hmac=" + mac, "data=hmac=x~hmac=redacted"},
		{"oversized", strings.Repeat("a", maxSegmentLen+10), strings.Repeat("a", maxSegmentLen) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.tok); got != tt.want {
				t.Errorf("Redact(%.60q) = %.80q, want %.80q", tt.tok, got, tt.want)
			}
		})
	}
}

func TestReason(t *testing.T) {
	v := testVerifier(t, key1)
	tests := []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{ErrMalformed, "malformed"},
		{errDupField, "malformed"},
		{ErrExpired, "expired"},
		{ErrNotYetValid, "early"},
		{ErrScope, "scope"},
		{errRawPath, "scope"},
		{ErrIP, "ip"},
		{ErrUnknownKey, "unknown_key"},
		{ErrSignature, "signature"},
		{errors.ErrUnsupported, "other"},
		{v.Verify("x", "/", "", t0), "malformed"},
	}
	for _, tt := range tests {
		if got := Reason(tt.err); got != tt.want {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
