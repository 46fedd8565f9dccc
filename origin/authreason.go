package origin

import (
	"errors"
	"sync/atomic"

	"segorigin/origin/token"
)

// AuthReason is the outcome of one request's authorization. It is the one
// list of outcomes: it indexes AuthStats.ByReason, names the
// segorigin_auth_total label (String) and picks the refusal log limiter
// (logGroup).
type AuthReason uint8

const (
	AuthOK         AuthReason = iota // a valid token
	AuthPublic                       // under a public prefix
	AuthMissing                      // no token where one is required
	AuthMalformed                    // a token that does not parse
	AuthExpired                      // past exp (+ skew)
	AuthEarly                        // before st (- skew)
	AuthScope                        // path outside the token's ACL
	AuthIP                           // client address differs from ip=
	AuthUnknownKey                   // kid names no key
	AuthSignature                    // MAC mismatch: tampered or forged
	NumAuthReasons                   // how many reasons there are
)

// String is the reason's metric label and log field.
func (r AuthReason) String() string {
	names := [NumAuthReasons]string{
		AuthOK: "ok", AuthPublic: "public", AuthMissing: "missing", AuthMalformed: "malformed",
		AuthExpired: "expired", AuthEarly: "early", AuthScope: "scope", AuthIP: "ip",
		AuthUnknownKey: "unknown_key", AuthSignature: "signature",
	}
	if r < NumAuthReasons {
		return names[r]
	}
	return "invalid"
}

// authReasonOf is the reason for check's error: nil, errNoToken or a token
// error (errors.Is with the token.Err* sentinels, which every token check
// returns). Anything else, which no check returns, counts as malformed.
func authReasonOf(err error) AuthReason {
	switch {
	case err == nil:
		return AuthOK
	case errors.Is(err, errNoToken):
		return AuthMissing
	case errors.Is(err, token.ErrExpired):
		return AuthExpired
	case errors.Is(err, token.ErrNotYetValid):
		return AuthEarly
	case errors.Is(err, token.ErrScope):
		return AuthScope
	case errors.Is(err, token.ErrIP):
		return AuthIP
	case errors.Is(err, token.ErrUnknownKey):
		return AuthUnknownKey
	case errors.Is(err, token.ErrSignature):
		return AuthSignature
	}
	return AuthMalformed
}

// logGroup is the limiter a refusal for r is logged under: its own,
// except that an unknown key and a bad signature (both a forged or
// mangled token) share one, so alternating them cannot double the rate.
func (r AuthReason) logGroup() AuthReason {
	if r == AuthUnknownKey {
		return AuthSignature
	}
	return r
}

// AuthCounters count authorization outcomes, indexed by AuthReason.
type AuthCounters[C any] struct {
	ByReason [NumAuthReasons]C
}

// authCounters are the live authorization counters.
type authCounters = AuthCounters[atomic.Int64]

func countAuth(s *authCounters, r AuthReason) { s.ByReason[r].Add(1) }

// authMetrics declares authorization's metric.
func authMetrics(t *table, st *AuthStats) {
	m := t.counter("auth_total", "Authorization outcomes by reason.", "reason")
	t.each(m, st.ByReason[:], func(r int) string { return AuthReason(r).String() })
}
