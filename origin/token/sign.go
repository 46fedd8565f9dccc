package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Claims is what a token grants.
type Claims struct {
	// Start is the first instant the token is valid (st=), to the second.
	// Zero means no start: valid until Expiry.
	Start time.Time
	// Expiry is the last instant the token is valid (exp=), to the second.
	// Required.
	Expiry time.Time
	// ACL lists the path patterns the token opens (acl=, joined by '!').
	// '*' matches any run of bytes, '/' included: "/vod/title42/*" opens
	// everything below /vod/title42/; a pattern without '*' opens exactly
	// that path. Required; patterns may not contain '~', '!' or bytes
	// outside 0x21-0x7e.
	ACL []string
	// IP, when set, binds the token to one client address (ip=). It is
	// written in canonical form; zones are refused.
	IP string
	// KeyID, when set, is written as kid= so verifiers pick the key
	// directly instead of trying each. It must equal the signing key's ID.
	KeyID string
}

// Sign returns the EdgeAuth-shape token for c, signed with key. Fields
// are written in the order ip, st, exp, acl, kid, hmac.
func Sign(key Key, c Claims) (string, error) {
	if len(key.Secret) == 0 {
		return "", errors.New("token: sign: key has no secret")
	}
	if c.KeyID != "" && c.KeyID != key.ID {
		return "", fmt.Errorf("token: sign: claims name key %q but the key is %q", c.KeyID, key.ID)
	}
	fields, err := claimFields(c)
	if err != nil {
		return "", fmt.Errorf("token: sign: %w", err)
	}
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('~')
		}
		b.WriteString(f)
	}
	mac := hmac.New(sha256.New, key.Secret)
	mac.Write([]byte(b.String()))
	b.WriteString("~hmac=")
	b.WriteString(hex.EncodeToString(mac.Sum(nil)))
	if b.Len() > MaxTokenLen {
		return "", fmt.Errorf("token: sign: token is %d bytes, more than %d", b.Len(), MaxTokenLen)
	}
	return b.String(), nil
}

// claimFields checks c and returns its fields, "name=value", in order.
func claimFields(c Claims) ([]string, error) {
	var fields []string
	if c.IP != "" {
		a, err := netip.ParseAddr(c.IP)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("IP %q is not an address without zone", c.IP)
		}
		fields = append(fields, "ip="+a.String())
	}
	if c.Expiry.IsZero() || c.Expiry.Unix() <= 0 {
		return nil, errors.New("expiry is required and must be after 1970")
	}
	exp := c.Expiry.Unix()
	if !c.Start.IsZero() {
		st := c.Start.Unix()
		if st <= 0 || st >= exp {
			return nil, errors.New("start must be after 1970 and before expiry")
		}
		fields = append(fields, "st="+strconv.FormatInt(st, 10))
	}
	fields = append(fields, "exp="+strconv.FormatInt(exp, 10))
	if len(c.ACL) == 0 {
		return nil, errors.New("ACL is required")
	}
	for _, p := range c.ACL {
		if p == "" || strings.IndexByte(p, '!') >= 0 || !validValue(p) {
			return nil, fmt.Errorf("ACL pattern %q is empty or has '!', '~' or a byte outside 0x21-0x7e", p)
		}
	}
	fields = append(fields, "acl="+strings.Join(c.ACL, "!"))
	if c.KeyID != "" {
		if err := checkKeyID(c.KeyID); err != nil {
			return nil, err
		}
		fields = append(fields, "kid="+c.KeyID)
	}
	return fields, nil
}

// validValue reports whether s may be a field value: non-empty, visible
// ASCII, no '~'.
func validValue[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '~' {
			return false
		}
	}
	return true
}
