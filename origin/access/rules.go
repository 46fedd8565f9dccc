package access

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Rules is an ordered allow/deny list. The zero Rules allows everything.
type Rules struct {
	list []rule
	has4 bool // an IPv4 rule or "all": IPv4 clients are tried
	has6 bool // an IPv6 rule or "all": IPv6 clients are tried
}

// rule is one allow or deny.
type rule struct {
	deny   bool
	all    bool         // "all": every family, and clients with no address
	prefix netip.Prefix // otherwise: the masked prefix
}

// Len is how many rules there are.
func (r *Rules) Len() int { return len(r.list) }

// add appends a rule for arg: "all", an address, or a prefix. warn is
// set when the prefix had host bits, masked as nginx masks them.
func (r *Rules) add(deny bool, arg string) (warn string, err error) {
	if arg == "all" {
		r.list = append(r.list, rule{deny: deny, all: true})
		r.has4, r.has6 = true, true
		return "", nil
	}
	if arg == "unix:" {
		return "", errors.New("unix: is not supported: this server listens on TCP only")
	}
	var p netip.Prefix
	if strings.IndexByte(arg, '/') >= 0 {
		if p, err = netip.ParsePrefix(arg); err != nil {
			return "", fmt.Errorf("invalid parameter %q: %w", arg, err)
		}
		if m := p.Masked(); m != p {
			warn = fmt.Sprintf("low address bits of %s are meaningless: used as %s", arg, m)
			p = m
		}
	} else {
		a, err := netip.ParseAddr(arg)
		if err != nil || a.Zone() != "" {
			return "", fmt.Errorf("invalid parameter %q: want an address, a prefix (CIDR) or all", arg)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	r.list = append(r.list, rule{deny: deny, prefix: p})
	if p.Addr().Is4() {
		r.has4 = true
	} else {
		r.has6 = true
	}
	return warn, nil
}

// Allowed reports whether the rules let a through (the first rule that
// matches decides; none matching allows), and the index of the rule that
// decided, -1 when none did.
func (r *Rules) Allowed(a netip.Addr) (ok bool, index int) {
	switch {
	case !a.IsValid():
		// nginx's UNIX-domain peer: only "all" speaks of it.
		return r.first(func(ru *rule) bool { return ru.all })
	case a.Is4In6() && r.has4, a.Is4():
		// ngx_http_access_handler: an IPv4-mapped address is tried as
		// IPv4 when IPv4 rules exist, and as IPv6 otherwise.
		a = a.Unmap()
		if !r.has4 {
			return true, -1
		}
	case !r.has6:
		return true, -1
	}
	return r.first(func(ru *rule) bool { return ru.all || ru.prefix.Contains(a) })
}

// first returns the verdict of the first rule match accepts.
func (r *Rules) first(match func(*rule) bool) (ok bool, index int) {
	for i := range r.list {
		if match(&r.list[i]) {
			return !r.list[i].deny, i
		}
	}
	return true, -1
}

// String is rule i as it was written (an address as a /32 or /128).
func (r *Rules) String(i int) string {
	if i < 0 || i >= len(r.list) {
		return ""
	}
	ru := r.list[i]
	verb, arg := "allow", "all"
	if ru.deny {
		verb = "deny"
	}
	if !ru.all {
		arg = ru.prefix.String()
	}
	return verb + " " + arg
}
