package access

import "net/netip"

// Policy is what a configuration says: the address rules and the valid
// referers. The zero Policy allows everything.
type Policy struct {
	Addresses Rules
	Referers  Referers
	// Warnings are what nginx would warn about at start (a prefix whose
	// host bits were masked), for the caller to log.
	Warnings []string
}

// Empty reports whether p refuses nothing: no address rule and no
// valid_referers statement.
func (p *Policy) Empty() bool { return len(p.Addresses.list) == 0 && !p.Referers.on }

// Check is the verdict for a request from addr (invalid when unknown)
// with the given Referer (present: the request has the field) and Host:
// the referer first (nginx's rewrite phase, where "if ($invalid_referer)"
// answers), then the address (its access phase).
func (p *Policy) Check(addr netip.Addr, referer []byte, present bool, host []byte) Verdict {
	if v := p.Referers.Check(referer, present, host); v != Allowed {
		return v
	}
	if ok, _ := p.Addresses.Allowed(addr); !ok {
		return DeniedAddress
	}
	return Allowed
}

// Verdict is a request's outcome: allowed, or the reason it is refused.
type Verdict uint8

const (
	Allowed        Verdict = iota // the request may proceed
	DeniedAddress                 // a deny rule matched the client address
	RefererMissing                // no Referer, and no "none"
	RefererBlocked                // a Referer without http:// or https://, and no "blocked"
	RefererHost                   // a Referer whose host matches no name or expression
	RefererPath                   // a Referer whose host matched a name given with a path it lacks
	NumVerdicts                   // how many verdicts there are
)

// String is the verdict's metric label and log field.
func (v Verdict) String() string {
	names := [NumVerdicts]string{
		Allowed: "allowed", DeniedAddress: "address", RefererMissing: "referer_none",
		RefererBlocked: "referer_blocked", RefererHost: "referer_host", RefererPath: "referer_path",
	}
	if v < NumVerdicts {
		return names[v]
	}
	return "invalid"
}
