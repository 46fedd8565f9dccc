package token

import (
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

// Fixed material for tests. key1's secret is 00..1f, key2's is 20..3f.
var (
	key1 = Key{ID: "k1", Secret: mustHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")}
	key2 = Key{ID: "k2", Secret: mustHex("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f")}
	key3 = Key{ID: "k3", Secret: mustHex("404142434445464748494a4b4c4d4e4f")}

	t0   = time.Unix(1700000000, 0) // st of the fixed tokens
	tExp = time.Unix(1700003600, 0) // exp of the fixed tokens
)

// opensslToken is signed by key1; its hmac was computed independently:
//
//	printf '%s' 'st=1700000000~exp=1700003600~acl=/vod/title42/*~kid=k1' |
//	  openssl dgst -sha256 -mac HMAC -macopt hexkey:000102...1f
const opensslToken = "st=1700000000~exp=1700003600~acl=/vod/title42/*~kid=k1" +
	"~hmac=d95653a18954b25629b1ab0d677a35d762dff9ceb17530d23422dde58b29be66"

// opensslURLToken is an EdgeAuth URL-form token for
// /vod/title42/master.m3u8, signed by key1, without kid:
//
//	printf '%s' 'exp=1700003600~url=/vod/title42/master.m3u8' |
//	  openssl dgst -sha256 -mac HMAC -macopt hexkey:000102...1f
const opensslURLToken = "exp=1700003600" +
	"~hmac=57b291dd708fbd1b7d53dd69a2598efe2f72097f090005efc7686ed72a3709ef"

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func testKeyring(t testing.TB, keys ...Key) *Keyring {
	t.Helper()
	kr, err := NewKeyring(keys...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return kr
}

func testVerifier(t testing.TB, keys ...Key) *Verifier {
	t.Helper()
	v, err := NewVerifier(VerifierConfig{Keys: testKeyring(t, keys...), Skew: DefaultSkew})
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func mustSign(t testing.TB, k Key, c Claims) string {
	t.Helper()
	tok, err := Sign(k, c)
	if err != nil {
		t.Fatalf("Sign(%+v): %v", c, err)
	}
	return tok
}

// errName renders an error for messages, nil included.
func errName(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// isSentinel: err is nil or wraps one of the package's Err* sentinels,
// which callers (origin's AuthReason) map to reasons.
func isSentinel(err error) bool {
	if err == nil {
		return true
	}
	for _, s := range []error{ErrMalformed, ErrExpired, ErrNotYetValid, ErrScope, ErrIP, ErrUnknownKey, ErrSignature} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
