package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"hash"
	"net/netip"
	"segorigin/internal/percent"
	"sync"
	"time"
)

// MaxTokenLen is the longest token accepted or produced, in bytes.
const MaxTokenLen = 2048

// DefaultSkew is the clock tolerance a server allows by default
// (segorigin's -auth-skew).
const DefaultSkew = 30 * time.Second

const (
	maxFields = 16       // fields before the final hmac
	hmacTag   = "~hmac=" // introduces the MAC, always the last field
	hexMACLen = 2 * sha256.Size
	chunkLen  = 256 // scratch room for hashing "~url=<path>"
)

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	// Keys holds the secrets tokens may be signed with. Required.
	Keys *Keyring
	// Skew is the clock tolerance: a token is expired when now > exp+Skew
	// and early when now+Skew < st. Zero allows none; negative is an
	// error.
	Skew time.Duration
}

// Verifier checks EdgeAuth-shape tokens. It is safe for concurrent use.
type Verifier struct {
	keys    *Keyring
	skew    time.Duration
	scratch sync.Pool // of *scratch
}

// scratch is the per-call working memory of a verification, pooled so that
// a valid token costs no allocation.
type scratch struct {
	buf [MaxTokenLen + chunkLen]byte // the token, then room to feed the hash
	sum [sha256.Size]byte            // the MAC computed
}

// NewVerifier checks cfg and returns a Verifier.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if cfg.Keys == nil || cfg.Keys.Len() == 0 {
		return nil, errors.New("token: verifier needs at least one key")
	}
	if cfg.Skew < 0 {
		return nil, errors.New("token: negative skew")
	}
	v := &Verifier{keys: cfg.Keys, skew: cfg.Skew}
	v.scratch.New = func() any { return new(scratch) }
	return v, nil
}

// Verify checks tok for a request of cleanPath from clientIP at now.
//
// cleanPath must be the request path percent-decoded and cleaned of dot
// segments by the caller, with its leading '/' and without the token
// carrier (/t/<segment>) or query. Verify does not clean it: it returns
// ErrScope for a path that does not start with '/' or holds "//", "/./" or
// "/../" (or ends in "/." or "/.."). clientIP is the bare client address
// (no port), or "" when unknown; tokens bound to an address then fail.
//
// The checks run in this order, and the first failure is returned: the
// grammar (ErrMalformed), the path shape (ErrScope), the MAC
// (ErrUnknownKey, ErrSignature), then, for an authentic token only, the
// time (ErrExpired, ErrNotYetValid), the address (ErrIP) and the ACL
// (ErrScope). A valid token costs no allocation.
func (v *Verifier) Verify(tok, cleanPath, clientIP string, now time.Time) error {
	_, err := verifyCopy(v, tok, cleanPath, clientIP, now)
	return err
}

// VerifyBytes is Verify for a token held in a byte slice (a query
// argument, cookie or header value); tok is only read.
func (v *Verifier) VerifyBytes(tok []byte, cleanPath, clientIP string, now time.Time) error {
	_, err := verifyCopy(v, tok, cleanPath, clientIP, now)
	return err
}

// VerifyBytesUntil is VerifyBytes that also returns, for a valid token,
// its last valid second (exp=, without the skew): what a response it
// authorises may be cached for at most.
func (v *Verifier) VerifyBytesUntil(tok []byte, cleanPath, clientIP string, now time.Time) (time.Time, error) {
	return verifyCopy(v, tok, cleanPath, clientIP, now)
}

// verifyCopy is Verify and VerifyBytes: tok is copied into pooled scratch,
// since viewing a string as []byte would need a converting allocation, so
// neither form allocates and the caller's bytes are only read.
func verifyCopy[T string | []byte](v *Verifier, tok T, cleanPath, clientIP string, now time.Time) (time.Time, error) {
	if len(tok) > MaxTokenLen {
		return time.Time{}, errTooLong
	}
	s := v.scratch.Get().(*scratch)
	defer v.scratch.Put(s)
	n := copy(s.buf[:MaxTokenLen], tok)
	return v.verify(s, s.buf[:n], cleanPath, clientIP, now)
}

// VerifySegment is Verify for a token in its path-segment form (see
// PathSegment): it decodes seg and verifies the token without allocating.
func (v *Verifier) VerifySegment(seg, cleanPath, clientIP string, now time.Time) error {
	_, err := v.VerifySegmentUntil(seg, cleanPath, clientIP, now)
	return err
}

// VerifySegmentUntil is VerifySegment that also returns, for a valid
// token, its last valid second (see VerifyBytesUntil).
func (v *Verifier) VerifySegmentUntil(seg, cleanPath, clientIP string, now time.Time) (time.Time, error) {
	if len(seg) > maxSegmentLen {
		return time.Time{}, errSegmentLong
	}
	s := v.scratch.Get().(*scratch)
	defer v.scratch.Put(s)
	n, err := decodeSegment(s.buf[:MaxTokenLen], seg)
	if err != nil {
		return time.Time{}, err
	}
	return v.verify(s, s.buf[:n], cleanPath, clientIP, now)
}

// verify checks tok and returns its exp= for a valid token.
func (v *Verifier) verify(s *scratch, tok []byte, path, clientIP string, now time.Time) (time.Time, error) {
	var p parsed
	if err := p.parse(tok); err != nil {
		return time.Time{}, err
	}
	if !isClean(path) {
		return time.Time{}, errRawPath
	}
	if err := v.authenticate(s, &p, path); err != nil {
		return time.Time{}, err
	}
	exp := time.Unix(p.exp, 0)
	if now.After(exp.Add(v.skew)) {
		return time.Time{}, ErrExpired
	}
	if p.hasStart && now.Add(v.skew).Before(time.Unix(p.start, 0)) {
		return time.Time{}, ErrNotYetValid
	}
	if p.ip != nil && !sameIP(p.ip, clientIP) {
		return time.Time{}, ErrIP
	}
	if p.acl != nil && !matchACL(p.acl, path) {
		return time.Time{}, ErrScope
	}
	return exp, nil
}

// authenticate finds the key the token names, or tries each key in turn
// when it names none, and checks the MAC in constant time per key.
func (v *Verifier) authenticate(s *scratch, p *parsed, path string) error {
	if p.kid != nil {
		e, ok := v.keys.byID[string(p.kid)]
		if !ok {
			return ErrUnknownKey
		}
		if !macMatches(s, e, p, path) {
			return ErrSignature
		}
		return nil
	}
	for _, e := range v.keys.keys {
		if macMatches(s, e, p, path) {
			return nil
		}
	}
	return ErrSignature
}

// macMatches computes the MAC of the signed text with e's key and compares
// it with the token's. The signed text is the token before "~hmac="; a
// token without acl= is EdgeAuth's URL form, which also signs
// "~url=<path>" without carrying it.
func macMatches(s *scratch, e *keyEntry, p *parsed, path string) bool {
	h := e.getMAC()
	h.Write(p.signed)
	if p.acl == nil {
		writeString(h, s.buf[MaxTokenLen:], "~url=")
		writeString(h, s.buf[MaxTokenLen:], path)
	}
	sum := h.Sum(s.sum[:0])
	e.macs.Put(h)
	return hmac.Equal(sum, p.mac[:])
}

// writeString feeds str to h through buf, since converting a string to a
// slice for an interface call would allocate.
func writeString(h hash.Hash, buf []byte, str string) {
	for len(str) > 0 {
		n := copy(buf, str)
		h.Write(buf[:n])
		str = str[n:]
	}
}

// parsed is a token split into the fields Verify uses. Its slices alias
// the token.
type parsed struct {
	signed     []byte // every byte before "~hmac="
	mac        [sha256.Size]byte
	ip, kid    []byte // nil when absent
	acl        []byte // nil when absent (URL form)
	start, exp int64
	hasStart   bool
}

// parse splits tok per the grammar in the package documentation.
func (p *parsed) parse(tok []byte) error {
	if len(tok) > MaxTokenLen {
		return errTooLong
	}
	cut := len(tok) - hexMACLen - len(hmacTag)
	if cut <= 0 || string(tok[cut:cut+len(hmacTag)]) != hmacTag ||
		!decodeLowerHex(p.mac[:], tok[cut+len(hmacTag):]) {
		return errNoHMAC
	}
	p.signed = tok[:cut]
	var names [maxFields][]byte
	nf := 0
	hasExp := false
	for rest, more := p.signed, true; more; {
		var field []byte
		field, rest, more = bytes.Cut(rest, []byte{'~'})
		name, value, err := splitField(field)
		if err != nil {
			return err
		}
		for _, seen := range names[:nf] {
			if bytes.Equal(seen, name) {
				return errDupField
			}
		}
		if nf == maxFields {
			return errTooManyFields
		}
		names[nf] = name
		nf++
		var ok bool
		switch string(name) {
		case "hmac", "url", "salt":
			return errReserved
		case "ip":
			p.ip = value
		case "st":
			if p.start, ok = parseUnix(value); !ok {
				return errNumber
			}
			p.hasStart = true
		case "exp":
			if p.exp, ok = parseUnix(value); !ok {
				return errNumber
			}
			hasExp = true
		case "acl":
			if !validACL(value) {
				return errEmptyPattern
			}
			p.acl = value
		case "kid":
			p.kid = value
		}
	}
	if !hasExp {
		return errNoExp
	}
	if p.hasStart && p.start > p.exp {
		return errStartAfterExp
	}
	return nil
}

// splitField splits "name=value" and checks both.
func splitField(f []byte) (name, value []byte, err error) {
	if len(f) == 0 {
		return nil, nil, errEmptyField
	}
	name, value, ok := bytes.Cut(f, []byte{'='})
	if !ok {
		return nil, nil, errFieldShape
	}
	if len(name) == 0 || len(name) > 16 {
		return nil, nil, errFieldName
	}
	for _, c := range name {
		if !isAlnum(c) && c != '_' && c != '-' {
			return nil, nil, errFieldName
		}
	}
	if !validValue(value) {
		return nil, nil, errFieldValue
	}
	return name, value, nil
}

// parseUnix parses 1-18 decimal digits: enough for any date, too few to
// overflow time arithmetic.
func parseUnix[T string | []byte](b T) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// decodeLowerHex decodes src into dst, which must be exactly half as long.
// Only lowercase digits are accepted, as EdgeAuth writes them: accepting
// both cases would let a flipped case bit leave a token valid.
func decodeLowerHex(dst, src []byte) bool {
	if len(src) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := lowerHexVal(src[2*i])
		lo, ok2 := lowerHexVal(src[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func lowerHexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// sameIP reports whether the token's ip= value names clientIP. Equal text
// is the fast path; otherwise both are parsed, so "::1" matches
// "0:0::1", an IPv4-mapped IPv6 client matches its IPv4 form, and a value
// percent-encoded by EdgeAuth's escape_early ("2001%3adb8%3a%3a1") works.
func sameIP(tokIP []byte, clientIP string) bool {
	if string(tokIP) == clientIP {
		return true
	}
	client, err := netip.ParseAddr(clientIP)
	if err != nil {
		return false
	}
	var buf [64]byte
	unescaped, ok := percent.Decode(buf[:0], tokIP)
	if !ok {
		return false
	}
	want, err := netip.ParseAddr(string(unescaped))
	if err != nil {
		return false
	}
	return want.Zone() == "" && client.WithZone("").Unmap() == want.Unmap()
}
