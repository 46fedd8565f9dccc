package clientaddr

import (
	"net/netip"
	"strings"
	"testing"
	"unicode"
)

func mustTrusted(t testing.TB, list ...string) *Trusted {
	t.Helper()
	tr, err := ParseTrusted(list)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestParseTrusted(t *testing.T) {
	tr := mustTrusted(t, "10.0.0.0/8", " 192.0.2.7 ", "2001:db8::/32", "")
	for s, want := range map[string]bool{
		"10.1.2.3": true, "11.0.0.1": false, "192.0.2.7": true, "192.0.2.8": false,
		"2001:db8::1": true, "2001:db9::1": false, "::ffff:10.0.0.1": true,
	} {
		if got := tr.Contains(netip.MustParseAddr(s)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", s, got, want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "nonsense", "::ffff:10.0.0.0/104"} {
		if _, err := ParseTrusted([]string{bad}); err == nil {
			t.Errorf("ParseTrusted(%q) = nil error, want refused", bad)
		}
	}
	if !(*Trusted)(nil).Empty() || !mustTrusted(t).Empty() || tr.Empty() {
		t.Errorf("Empty: nil, none and some disagree")
	}
}

func TestFromXFF(t *testing.T) {
	tr := mustTrusted(t, "10.0.0.0/8")
	tests := []struct {
		name, peer string
		values     []string
		want       string
	}{
		{"untrusted peer, spoofed header ignored", "203.0.113.9", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted peer, no header", "10.0.0.1", nil, "10.0.0.1"},
		{"trusted peer, one hop", "10.0.0.1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"client spoofs a leftmost entry", "10.0.0.1", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"two trusted proxies", "10.0.0.1", []string{"1.2.3.4, 198.51.100.1, 10.0.0.2"}, "198.51.100.1"},
		{"several field lines form one list", "10.0.0.1", []string{"1.2.3.4", "198.51.100.1, 10.0.0.2"}, "198.51.100.1"},
		{"all hops trusted: the leftmost", "10.0.0.1", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"malformed entry: last trusted hop", "10.0.0.1", []string{"198.51.100.1, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"malformed rightmost: the peer", "10.0.0.1", []string{"198.51.100.1, not-an-ip"}, "10.0.0.1"},
		{"empty elements skipped", "10.0.0.1", []string{"198.51.100.1,, ,"}, "198.51.100.1"},
		{"port kept by some proxies", "10.0.0.1", []string{"198.51.100.1:4711"}, "198.51.100.1"},
		{"IPv6 with port", "10.0.0.1", []string{"[2001:db8::7]:4711"}, "2001:db8::7"},
		{"IPv6", "10.0.0.1", []string{"2001:db8::7"}, "2001:db8::7"},
		{"mapped peer", "::ffff:10.0.0.1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"zone refused", "10.0.0.1", []string{"fe80::1%eth0"}, "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vals [][]byte
			for _, v := range tt.values {
				vals = append(vals, []byte(v))
			}
			got := tr.FromXFF(netip.MustParseAddr(tt.peer), vals)
			if got.String() != tt.want {
				t.Errorf("FromXFF(%s, %q) = %s, want %s", tt.peer, tt.values, got, tt.want)
			}
		})
	}
}

// TestFromForwarded: RFC 7239 §4-§6 syntax, read right to left.
func TestFromForwarded(t *testing.T) {
	tr := mustTrusted(t, "10.0.0.0/8", "2001:db8:cafe::/48")
	tests := []struct {
		name, peer string
		values     []string
		want       string
	}{
		{"untrusted peer", "203.0.113.9", []string{"for=198.51.100.1"}, "203.0.113.9"},
		{"RFC 7239 §4 example", "10.0.0.1", []string{`for="_gazonk"`}, "10.0.0.1"},
		{"quoted IPv6 with port", "10.0.0.1", []string{`For="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17"},
		{"§4: for, proto, by", "10.0.0.1", []string{"for=192.0.2.60;proto=http;by=203.0.113.43"}, "192.0.2.60"},
		{"§4: two elements", "10.0.0.1", []string{"for=192.0.2.43, for=198.51.100.17"}, "198.51.100.17"},
		{"trusted nearest hop skipped", "10.0.0.1", []string{"for=192.0.2.43, for=10.0.0.2"}, "192.0.2.43"},
		{"several field lines", "10.0.0.1", []string{"for=1.2.3.4", "for=192.0.2.43;proto=https"}, "192.0.2.43"},
		{"unknown ends the walk", "10.0.0.1", []string{"for=192.0.2.43, for=unknown"}, "10.0.0.1"},
		{"quoted comma and semicolon", "10.0.0.1", []string{`for=192.0.2.43;ext="a,b;c"`}, "192.0.2.43"},
		{"element without for", "10.0.0.1", []string{"for=192.0.2.43, by=10.0.0.2"}, "10.0.0.1"},
		{"unbracketed IPv6 refused", "10.0.0.1", []string{`for="2001:db8::1"`}, "10.0.0.1"},
		{"IPv4 with port", "10.0.0.1", []string{`for="192.0.2.43:80"`}, "192.0.2.43"},
		{"obfuscated port", "10.0.0.1", []string{`for="192.0.2.43:_p1"`}, "192.0.2.43"},
		{"bad port", "10.0.0.1", []string{`for="192.0.2.43:8x"`}, "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vals [][]byte
			for _, v := range tt.values {
				vals = append(vals, []byte(v))
			}
			if got := tr.FromForwarded(netip.MustParseAddr(tt.peer), vals); got.String() != tt.want {
				t.Errorf("FromForwarded(%s, %q) = %s, want %s", tt.peer, tt.values, got, tt.want)
			}
		})
	}
}

// FuzzForwarding: whatever the headers, the answer is the peer, or an
// address named in them; from an untrusted peer it is always the peer.
func FuzzForwarding(f *testing.F) {
	for _, s := range []string{"198.51.100.1, 10.0.0.2", "for=192.0.2.43, for=10.0.0.2", `for="[2001:db8::1]:80";by=x`, "\"a,b\"", ",,,"} {
		f.Add("10.0.0.1", s)
		f.Add("203.0.113.9", s)
	}
	tr := mustTrusted(f, "10.0.0.0/8")
	f.Fuzz(func(t *testing.T, peerStr, header string) {
		peer, err := netip.ParseAddr(peerStr)
		if err != nil {
			return
		}
		vals := [][]byte{[]byte(header)}
		for _, got := range []netip.Addr{tr.FromXFF(peer, vals), tr.FromForwarded(peer, vals)} {
			if !got.IsValid() {
				t.Fatalf("peer %s, header %q: invalid address", peer, header)
			}
			if !tr.Contains(peer) && got != peer.Unmap() {
				t.Fatalf("untrusted peer %s, header %q: got %s", peer, header, got)
			}
			if got != peer.Unmap() && !namedIn(header, got) {
				t.Fatalf("peer %s, header %q: %s is neither the peer nor named in the header", peer, header, got)
			}
		}
	})
}

// namedIn reports whether some token of h parses to a.
func namedIn(h string, a netip.Addr) bool {
	for _, tok := range strings.FieldsFunc(h, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(`,;="[]\`, r) }) {
		for _, cand := range []string{tok, strings.Split(tok, "%")[0]} {
			if p, err := netip.ParseAddr(cand); err == nil && p.Unmap() == a {
				return true
			}
			if ap, err := netip.ParseAddrPort(cand); err == nil && ap.Addr().Unmap() == a {
				return true
			}
		}
		if host, _, ok := strings.Cut(tok, ":"); ok {
			if p, err := netip.ParseAddr(host); err == nil && p.Unmap() == a {
				return true
			}
		}
	}
	return false
}
