package access

import (
	"net/netip"
	"testing"
)

func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return p
}

// TestAllowed follows ngx_http_access_handler: the first rule that
// matches decides, none matching allows, and each family is tried
// against its own rules and "all".
func TestAllowed(t *testing.T) {
	tests := []struct {
		name, rules, addr string // addr "" is an unknown client
		want              bool
		index             int
	}{
		{"no rules", "", "203.0.113.9", true, -1},
		{"allow then deny all: inside", "allow 10.0.0.0/8; deny all", "10.1.2.3", true, 0},
		{"allow then deny all: outside", "allow 10.0.0.0/8; deny all", "11.0.0.1", false, 1},
		{"first match wins over a later allow", "deny 127.0.0.0/8; allow 127.0.0.1", "127.0.0.1", false, 0},
		{"a single address", "deny 192.0.2.7", "192.0.2.7", false, 0},
		{"a single address, neighbour", "deny 192.0.2.7", "192.0.2.8", true, -1},
		{"no match allows (no deny all)", "allow 10.0.0.0/8", "11.0.0.1", true, -1},
		{"IPv6 prefix", "allow 2001:db8::/32; deny all", "2001:db8::1", true, 0},
		{"IPv6 outside", "allow 2001:db8::/32; deny all", "2001:db9::1", false, 1},
		{"IPv4 client, IPv6 rules only: allowed", "deny ::/0", "10.0.0.1", true, -1},
		{"IPv6 client, IPv4 rules only: allowed", "deny 0.0.0.0/0", "2001:db8::1", true, -1},
		{"IPv6 rule skipped for IPv4 client", "deny 2001:db8::/32; allow 10.0.0.0/8; deny all", "10.0.0.1", true, 1},
		{"mapped client, IPv4 rules exist: tried as IPv4", "allow 10.0.0.0/8; deny all", "::ffff:10.0.0.1", true, 0},
		{"mapped client, no IPv4 rules: tried as IPv6", "deny ::ffff:0:0/96", "::ffff:10.0.0.1", false, 0},
		{"unknown client: all only", "allow 10.0.0.0/8; deny all", "", false, 1},
		{"unknown client, no all: allowed", "deny 10.0.0.0/8", "", true, -1},
		{"host bits masked", "deny 10.1.2.3/8", "10.200.0.1", false, 0},
		{"/0 matches its family", "deny 0.0.0.0/0", "198.51.100.1", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.rules)
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			ok, i := p.Addresses.Allowed(a)
			if ok != tt.want || i != tt.index {
				t.Errorf("%q: Allowed(%s) = %v, %d, want %v, %d", tt.rules, tt.addr, ok, i, tt.want, tt.index)
			}
		})
	}
}

func TestRulesString(t *testing.T) {
	p := mustParse(t, "allow 192.0.2.7; deny 10.1.2.3/8; allow 2001:db8::/32; deny all")
	want := []string{"allow 192.0.2.7/32", "deny 10.0.0.0/8", "allow 2001:db8::/32", "deny all"}
	if p.Addresses.Len() != len(want) {
		t.Fatalf("Len() = %d, want %d", p.Addresses.Len(), len(want))
	}
	for i, w := range want {
		if got := p.Addresses.String(i); got != w {
			t.Errorf("String(%d) = %q, want %q", i, got, w)
		}
	}
	if len(p.Warnings) != 1 {
		t.Errorf("Warnings = %q, want one for 10.1.2.3/8", p.Warnings)
	}
}
