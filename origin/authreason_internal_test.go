package origin

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"segorigin/origin/token"
)

func TestAuthReasonOf(t *testing.T) {
	v, err := token.NewVerifier(token.VerifierConfig{Keys: mustKeyring(t), Skew: token.DefaultSkew})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		err  error
		want AuthReason
	}{
		{nil, AuthOK},
		{errNoToken, AuthMissing},
		{token.ErrMalformed, AuthMalformed},
		{token.ErrExpired, AuthExpired},
		{token.ErrNotYetValid, AuthEarly},
		{token.ErrScope, AuthScope},
		{fmt.Errorf("wrapped: %w", token.ErrScope), AuthScope},
		{token.ErrIP, AuthIP},
		{token.ErrUnknownKey, AuthUnknownKey},
		{token.ErrSignature, AuthSignature},
		{errors.ErrUnsupported, AuthMalformed}, // no check returns it
		{v.Verify("x", "/", "", time.Unix(1700000000, 0)), AuthMalformed},
	}
	for _, tt := range tests {
		if got := authReasonOf(tt.err); got != tt.want {
			t.Errorf("authReasonOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestAuthReasonNames: every reason has its own label (segorigin_auth_total
// would otherwise merge two, or export an empty one).
func TestAuthReasonNames(t *testing.T) {
	seen := map[string]AuthReason{}
	for r := range NumAuthReasons {
		name := r.String()
		if name == "" || name == "invalid" {
			t.Errorf("AuthReason(%d) has no name", r)
		}
		if o, dup := seen[name]; dup {
			t.Errorf("AuthReason(%d) and AuthReason(%d) are both %q", o, r, name)
		}
		seen[name] = r
	}
}

func mustKeyring(t *testing.T) *token.Keyring {
	t.Helper()
	ring, err := token.NewKeyring(token.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	return ring
}
