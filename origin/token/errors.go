package token

import "errors"

// Sentinel errors returned by Verify, VerifyBytes, VerifySegment, the
// segment decoders and SecureLinkVerifier.Verify. Test them with errors.Is:
// some returns wrap them with a static detail (still allocation-free).
// Their text is safe to log; it never contains token or key material.
var (
	// ErrMalformed: the token does not follow the grammar in the package
	// documentation (or is longer than MaxTokenLen).
	ErrMalformed = errors.New("token: malformed")
	// ErrExpired: now is later than exp plus the skew.
	ErrExpired = errors.New("token: expired")
	// ErrNotYetValid: now plus the skew is earlier than st.
	ErrNotYetValid = errors.New("token: not yet valid")
	// ErrScope: the path matches no ACL pattern, or the caller passed a path
	// that is not clean (see Verify).
	ErrScope = errors.New("token: path outside scope")
	// ErrIP: the token is bound to another client address.
	ErrIP = errors.New("token: client address not allowed")
	// ErrUnknownKey: the token names (kid=) a key the keyring lacks.
	ErrUnknownKey = errors.New("token: unknown key id")
	// ErrSignature: no key produces the token's MAC.
	ErrSignature = errors.New("token: bad signature")
)

// detailError adds a fixed explanation to a sentinel. Every instance is a
// package-level value, so returning one never allocates.
type detailError struct {
	kind error
	msg  string
}

func (e *detailError) Error() string { return e.kind.Error() + ": " + e.msg }
func (e *detailError) Unwrap() error { return e.kind }

func malformed(msg string) error { return &detailError{kind: ErrMalformed, msg: msg} }

var (
	errTooLong       = malformed("longer than MaxTokenLen")
	errNoHMAC        = malformed("does not end in ~hmac=<64 lowercase hex digits>")
	errEmptyField    = malformed("empty field")
	errFieldShape    = malformed("field is not name=value")
	errFieldName     = malformed("field name is not 1-16 of [A-Za-z0-9_-]")
	errFieldValue    = malformed("field value is empty or has a byte outside 0x21-0x7e")
	errDupField      = malformed("duplicate field")
	errReserved      = malformed("field hmac, url or salt before the final hmac")
	errTooManyFields = malformed("more than 16 fields")
	errNumber        = malformed("st or exp is not 1-18 decimal digits")
	errNoExp         = malformed("no exp field")
	errStartAfterExp = malformed("st is after exp")
	errEmptyPattern  = malformed("empty acl pattern")
	errSegment       = malformed("path segment is not canonical base64url")
	errSegmentLong   = malformed("path segment longer than the encoding of MaxTokenLen bytes")
	errLinkHash      = malformed("secure link hash is not 22 base64url digits")
	errLinkExpires   = malformed("secure link expiry is not 1-18 decimal digits")

	errRawPath = &detailError{kind: ErrScope, msg: "path is not clean (caller must decode and remove dot segments)"}
)
