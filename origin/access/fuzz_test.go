package access

import (
	"net/netip"
	"testing"
)

// FuzzParse: any text parses or is refused without a panic; what parses
// judges any request with a verdict in range, and "deny all" appended
// changes only what no rule matched.
func FuzzParse(f *testing.F) {
	for _, src := range []string{
		"allow 10.0.0.0/8; deny all", "deny 127.0.0.0/8", "allow 2001:db8::/32;\ndeny all;",
		nginxExample, `valid_referers .example.com "~^a\.b/" www.example.*`, "# x\n",
	} {
		f.Add(src, "10.1.2.3", "http://www.example.com/", "media.test")
		f.Add(src, "::ffff:127.0.0.1", "foo", "")
		f.Add(src, "2001:db8::1", "https://images.google.com/x", "www.example.com:80")
	}
	f.Fuzz(func(t *testing.T, src, addr, referer, host string) {
		p, err := Parse(src)
		if err != nil {
			return
		}
		a, _ := netip.ParseAddr(addr) // invalid: an unknown client
		for _, present := range []bool{false, true} {
			if v := p.Check(a, []byte(referer), present, []byte(host)); v >= NumVerdicts {
				t.Fatalf("Parse(%q).Check(%s, %q) = %d, out of range", src, addr, referer, v)
			} else if p.Empty() && v != Allowed {
				t.Fatalf("empty Parse(%q).Check(%s, %q) = %v, want allowed", src, addr, referer, v)
			}
		}
		ok, i := p.Addresses.Allowed(a)
		if i < -1 || i >= p.Addresses.Len() || (i == -1 && !ok) {
			t.Fatalf("Parse(%q).Allowed(%s) = %v, %d: index out of range or refused by no rule", src, addr, ok, i)
		}
		closed := p.Addresses
		closed.list = closed.list[:len(closed.list):len(closed.list)]
		closed.add(true, "all")
		ok2, i2 := closed.Allowed(a)
		if (i != -1 && (ok2 != ok || i2 != i)) || (i == -1 && (ok2 || i2 != closed.Len()-1)) {
			t.Fatalf("Parse(%q): %s decided by rule %d (%v), with deny all appended by %d (%v)", src, addr, i, ok, i2, ok2)
		}
	})
}
