package access

import (
	"strings"
	"testing"
)

// nginxExample is the example of nginx's valid_referers documentation
// (ngx_http_referer_module), with a second regular expression.
const nginxExample = `valid_referers none blocked server_names
               *.example.com example.* www.example.org/galleries/
               ~\.google\. "~^partner\.test/";`

// TestReferers: each case as ngx_http_referer_variable decides it.
func TestReferers(t *testing.T) {
	long := strings.Repeat("a", 255)
	tests := []struct {
		name, list, referer string
		absent              bool
		want                Verdict
	}{
		{"none: no Referer", nginxExample, "", true, Allowed},
		{"no Referer without none", "valid_referers example.com", "", true, RefererMissing},
		{"blocked: no scheme", nginxExample, "foo", false, Allowed},
		{"no scheme without blocked", "valid_referers example.com", "foo", false, RefererBlocked},
		{"empty Referer is blocked, not none", "valid_referers none example.com", "", false, RefererBlocked},
		{"shorter than http://i.ru counts as blocked", "valid_referers a.b", "http://a.b", false, RefererBlocked},
		{"ftp scheme counts as blocked", "valid_referers blocked example.com", "ftp://example.com/", false, Allowed},
		{"server_names: the request's Host", nginxExample, "http://media.test/page", false, Allowed},
		{"head wildcard", nginxExample, "http://www.example.com/x", false, Allowed},
		{"head wildcard, deeper", nginxExample, "https://a.b.example.com/", false, Allowed},
		{"scheme and host without case", nginxExample, "HTTPS://WWW.Example.COM/x", false, Allowed},
		{"port ignored", nginxExample, "http://www.example.com:8443/x", false, Allowed},
		{"tail wildcard", nginxExample, "http://example.net/", false, Allowed},
		{"tail wildcard, longer tail", nginxExample, "http://example.co.uk/", false, Allowed},
		{"name with path", nginxExample, "http://www.example.org/galleries/1.html", false, Allowed},
		{"name with path, other path", nginxExample, "http://www.example.org/other/", false, RefererPath},
		{"name with path, no path", nginxExample, "http://www.example.org", false, RefererPath},
		{"regex after the scheme", nginxExample, "https://images.google.co.uk/search", false, Allowed},
		{"regex without case", nginxExample, "https://images.GOOGLE.com/", false, Allowed},
		{"anchored regex", nginxExample, "http://partner.test/x", false, Allowed},
		{"anchored regex, not at the start", nginxExample, "http://evil.partner.test/x", false, RefererHost},
		{"other host", nginxExample, "http://evil.test/", false, RefererHost},
		{"userinfo is part of the host", nginxExample, "http://www.example.com@evil.test/", false, RefererHost},
		{"*.name is not the name", "valid_referers *.example.com", "http://example.com/", false, RefererHost},
		{".name is the name", "valid_referers .example.com", "http://example.com/", false, Allowed},
		{".name is under it", "valid_referers .example.com", "http://a.example.com/", false, Allowed},
		{"tail needs a label", "valid_referers www.example.*", "http://www.example/", false, RefererHost},
		{"longest head wildcard first", "valid_referers *.example.com/a/ *.img.example.com", "http://x.img.example.com/b", false, Allowed},
		{"shorter head wildcard's path", "valid_referers *.example.com/a/ *.img.example.com", "http://x.example.com/b", false, RefererPath},
		{"exact before wildcard", "valid_referers *.example.com www.example.com/a/", "http://www.example.com/b", false, RefererPath},
		{"matched name's path decides, not a regex", "valid_referers example.com/ok/ ~example", "http://example.com/bad", false, RefererPath},
		{"path is case-sensitive", "valid_referers example.com/Ok/", "http://example.com/ok/", false, RefererPath},
		{"host of 255 bytes", "valid_referers " + long, "http://" + long + "/", false, Allowed},
		{"host of 256 bytes: invalid before any regex", "valid_referers ~a", "http://a" + long + "/", false, RefererHost},
		{"no valid_referers: all valid", "allow all", "foo", false, Allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.list)
			got := p.Referers.Check([]byte(tt.referer), !tt.absent, []byte("Media.test:8080"))
			if got != tt.want {
				t.Errorf("%s: Check(%q) = %v, want %v", tt.list, tt.referer, got, tt.want)
			}
		})
	}
}

// TestPolicyCheck: the referer is judged first (nginx's rewrite phase),
// then the address (its access phase).
func TestPolicyCheck(t *testing.T) {
	p := mustParse(t, "deny 127.0.0.0/8; valid_referers example.com")
	for _, tt := range []struct {
		addr, referer string
		want          Verdict
	}{
		{"127.0.0.1", "http://evil.test/", RefererHost},
		{"127.0.0.1", "http://example.com/", DeniedAddress},
		{"192.0.2.1", "http://example.com/", Allowed},
	} {
		if got := p.Check(mustAddr(tt.addr), []byte(tt.referer), true, nil); got != tt.want {
			t.Errorf("Check(%s, %q) = %v, want %v", tt.addr, tt.referer, got, tt.want)
		}
	}
}
