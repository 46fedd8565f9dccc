package clientaddr

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Trusted is the set of proxy addresses whose forwarding headers and
// PROXY lines are believed. The zero value trusts nobody.
type Trusted struct {
	prefixes []netip.Prefix
}

// ParseTrusted parses CIDR prefixes ("10.0.0.0/8", "2001:db8::/32"); a bare
// address means that one address.
func ParseTrusted(list []string) (*Trusted, error) {
	t := &Trusted{}
	var errs []error
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("trusted proxy %q: %w", s, err))
				continue
			}
			t.prefixes = append(t.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("trusted proxy %q: %w", s, err))
			continue
		}
		if p.Addr().Is4In6() {
			errs = append(errs, fmt.Errorf("trusted proxy %q: write IPv4 prefixes in IPv4 form", s))
			continue
		}
		t.prefixes = append(t.prefixes, p.Masked())
	}
	return t, errors.Join(errs...)
}

// Empty reports whether no proxy is trusted.
func (t *Trusted) Empty() bool { return t == nil || len(t.prefixes) == 0 }

// Contains reports whether a is a trusted proxy. An IPv4-mapped IPv6
// address (a dual-stack socket's view of an IPv4 peer) counts as IPv4.
func (t *Trusted) Contains(a netip.Addr) bool {
	if t == nil || !a.IsValid() {
		return false
	}
	a = a.Unmap()
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// FromXFF returns the client address for a request from peer carrying
// the X-Forwarded-For field lines values (in the order received; several
// lines form one list, RFC 9110 §5.3). From an untrusted peer, or without
// the header, it is peer.
func (t *Trusted) FromXFF(peer netip.Addr, values [][]byte) netip.Addr {
	client := peer.Unmap()
	if !t.Contains(client) {
		return client
	}
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for len(v) > 0 {
			var hop []byte
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				hop, v = v[j+1:], v[:j]
			} else {
				hop, v = v, nil
			}
			hop = bytes.TrimSpace(hop)
			if len(hop) == 0 {
				continue // "a,,b" or a trailing comma: an empty list element (RFC 9110 §5.6.1)
			}
			a, ok := parseXFFHop(hop)
			if !ok {
				return client // rule 2: the last trusted hop
			}
			client = a
			if !t.Contains(a) {
				return a
			}
		}
	}
	return client
}

// parseXFFHop reads one X-Forwarded-For entry: an address, optionally with
// a port ("192.0.2.1:4711", "[2001:db8::1]:4711"), as some proxies write.
func parseXFFHop(b []byte) (netip.Addr, bool) {
	s := string(b)
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// FromForwarded returns the client address for a request from peer
// carrying the Forwarded field lines values (RFC 7239 §4): the for=
// parameters of its elements, right to left, to the first untrusted hop.
func (t *Trusted) FromForwarded(peer netip.Addr, values [][]byte) netip.Addr {
	client := peer.Unmap()
	if !t.Contains(client) {
		return client
	}
	var elems [][]byte
	for _, v := range values {
		elems = splitQuoted(elems, v, ',')
	}
	for i := len(elems) - 1; i >= 0; i-- {
		e := bytes.TrimSpace(elems[i])
		if len(e) == 0 {
			continue
		}
		node, ok := forParam(e)
		if !ok {
			return client
		}
		a, ok := parseForwardedNode(node)
		if !ok {
			return client // malformed, "unknown" or obfuscated: rule 2
		}
		client = a
		if !t.Contains(a) {
			return a
		}
	}
	return client
}

// forParam returns the value of the for= parameter of one
// forwarded-element (RFC 7239 §4: pairs separated by ';', names
// case-insensitive), unquoted. An element without for= (a proxy that
// records only by= or proto=) is not something to walk past: false.
func forParam(elem []byte) ([]byte, bool) {
	var pairs [][]byte
	pairs = splitQuoted(pairs, elem, ';')
	for _, p := range pairs {
		name, value, ok := bytes.Cut(bytes.TrimSpace(p), []byte("="))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(name), []byte("for")) {
			continue
		}
		value = bytes.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = unquote(value[1 : len(value)-1])
		}
		return value, true
	}
	return nil, false
}

// parseForwardedNode reads a node (RFC 7239 §6): IPv4 or "[IPv6]",
// optionally with ":port"; "unknown" and obfuscated identifiers ("_hidden")
// are not addresses.
func parseForwardedNode(n []byte) (netip.Addr, bool) {
	s := string(n)
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" || !validNodePort(s[end+1:]) {
			return netip.Addr{}, false
		}
		return a.Unmap(), true
	}
	host, port, _ := strings.Cut(s, ":")
	if port != "" && !validNodePort(":"+port) {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is4() {
		return netip.Addr{}, false
	}
	return a, true
}

// validNodePort accepts "", ":<digits>" or an obfuscated port ":_x".
func validNodePort(p string) bool {
	if p == "" {
		return true
	}
	if len(p) < 2 || p[0] != ':' {
		return false
	}
	if p[1] == '_' {
		return true
	}
	for _, c := range p[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(p) <= 6
}

// splitQuoted appends to dst the parts of v separated by sep outside
// quoted strings (RFC 9110 §5.6.4: a quoted-string may hold sep).
func splitQuoted(dst [][]byte, v []byte, sep byte) [][]byte {
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			dst = append(dst, v[start:i])
			start = i + 1
		}
	}
	return append(dst, v[start:])
}

// unquote removes quoted-pair backslashes (RFC 9110 §5.6.4).
func unquote(q []byte) []byte {
	if bytes.IndexByte(q, '\\') < 0 {
		return q
	}
	out := make([]byte, 0, len(q))
	for i := 0; i < len(q); i++ {
		if q[i] == '\\' && i+1 < len(q) {
			i++
		}
		out = append(out, q[i])
	}
	return out
}
