package access

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestSplit: nginx's tokens (ngx_conf_read_token): white space, ';',
// comments, quotes and backslashes.
func TestSplit(t *testing.T) {
	tests := []struct {
		name, src string
		want      []statement
	}{
		{"one line", "allow 10.0.0.0/8; deny all", []statement{{1, []string{"allow", "10.0.0.0/8"}}, {1, []string{"deny", "all"}}}},
		{"lines and comments", "# CDN\nallow 10.0.0.0/8; # shield\n\ndeny   all;\n", []statement{{2, []string{"allow", "10.0.0.0/8"}}, {4, []string{"deny", "all"}}}},
		{"statement over lines", "valid_referers none\n  *.example.com;", []statement{{1, []string{"valid_referers", "none", "*.example.com"}}}},
		{"quotes", `valid_referers "~a b;c" '~x'`, []statement{{1, []string{"valid_referers", "~a b;c", "~x"}}}},
		{"escapes", `valid_referers ~a\;b "~\"q\"" ~\.x\\`, []statement{{1, []string{"valid_referers", `~a\;b`, `~"q"`, `~\.x\`}}}},
		{"hash inside an argument", "valid_referers ~a#b", []statement{{1, []string{"valid_referers", "~a#b"}}}},
		{"empty", " \n# nothing\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := split(tt.src)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("split(%q) = %v, %v, want %v", tt.src, got, err, tt.want)
			}
		})
	}
}

// TestParseErrors: what nginx refuses at start is refused, with the line.
func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"allow", "takes one argument"},
		{"allow 10.0.0.0/8 11.0.0.0/8", "takes one argument"},
		{"deny 10.0.0.256", `invalid parameter "10.0.0.256"`},
		{"deny 10.0.0.0/33", `invalid parameter "10.0.0.0/33"`},
		{"deny fe80::1%eth0", "invalid parameter"},
		{"deny unix:", "TCP only"},
		{"allow all;\n\ndeny nonsense", "line 3"},
		{"permit all", "unknown directive"},
		{";", `unexpected ";"`},
		{"location / { deny all; }", "blocks are not supported"},
		{`valid_referers "~a`, "unterminated"},
		{`valid_referers "~a"b`, "after a quoted argument"},
		{`valid_referers ~a\`, "backslash at the end"},
		{"valid_referers", "one argument at least"},
		{"valid_referers none blocked", `without any valid referer`},
		{"valid_referers ~", "empty regex"},
		{"valid_referers ~(", "missing closing )"},
		{"valid_referers *.example.*", "invalid hostname or wildcard"},
		{"valid_referers www.*.com", "invalid hostname or wildcard"},
		{"valid_referers *", "invalid hostname or wildcard"},
		{"valid_referers example..com", "invalid hostname or wildcard"},
		{"valid_referers example.com example.com/a/", "conflicting parameter"},
		{"valid_referers example.com .example.com", "conflicting parameter"},
		{"valid_referers " + strings.Repeat("a", 256), "invalid hostname or wildcard"},
	}
	for _, tt := range tests {
		p, err := Parse(tt.src)
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, %v, want an ErrSyntax containing %q", tt.src, p, err, tt.want)
		}
	}
}

func TestEmpty(t *testing.T) {
	for src, want := range map[string]bool{
		"": true, "# only a comment": true, "deny all": false, "valid_referers server_names": false,
	} {
		if got := mustParse(t, src).Empty(); got != want {
			t.Errorf("Parse(%q).Empty() = %v, want %v", src, got, want)
		}
	}
}
