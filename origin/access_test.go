package origin_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"segorigin/origin"
	"segorigin/origin/admin"
)

// accessServer serves /vod/a.m3u8 under the -access statements rules,
// with cfg changed by mod.
func accessServer(t *testing.T, rules string, mod func(*origin.Config)) *testServer {
	t.Helper()
	ts := startServer(t, "", func(c *origin.Config) {
		c.Access = rules
		if mod != nil {
			mod(c)
		}
	})
	writeFile(t, ts.root, "vod/a.m3u8", "#EXTM3U\n")
	return ts
}

// mustRefused: r is the 403 of a refusal, its body the status only.
func mustRefused(t *testing.T, r *response, what string) {
	t.Helper()
	mustStatus(t, r, 403, what)
	if string(r.body) != "403 Forbidden\n" {
		t.Errorf("%s: body %q, want %q", what, r.body, "403 Forbidden\n")
	}
}

// refusedMetric is the scraped value of segorigin_access_refused_total
// for reason, as a line of /metrics.
func refusedMetric(ts *testServer, reason string, n int) (line string, ok bool) {
	rec := httptest.NewRecorder()
	admin.Handler(ts.srv, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	line = fmt.Sprintf(`segorigin_access_refused_total{reason=%q} %d`, reason, n)
	return line, strings.Contains(rec.Body.String(), line+"\n")
}

func mustCounted(t *testing.T, ts *testServer, reason string, n int) {
	t.Helper()
	if line, ok := refusedMetric(ts, reason, n); !ok {
		t.Errorf("/metrics lacks %q", line)
	}
}

// TestAccessByPeerAddress: nginx's allow/deny against the connection's
// peer (ngx_http_access_module: the first rule that matches decides, for
// every method).
func TestAccessByPeerAddress(t *testing.T) {
	ts := accessServer(t, "deny 127.0.0.0/8", nil)
	mustRefused(t, ts.get("/vod/a.m3u8"), "GET from 127.0.0.1 under deny 127.0.0.0/8")
	mustStatus(t, ts.do("HEAD", "/vod/a.m3u8"), 403, "HEAD")
	mustStatus(t, ts.do("OPTIONS", "/vod/a.m3u8", "Origin: https://player.test", "Access-Control-Request-Method: GET"), 403, "CORS preflight")
	mustStatus(t, ts.do("POST", "/vod/a.m3u8"), 403, "POST: nginx's access phase runs before the method is judged")
	mustCounted(t, ts, "address", 4)

	ts = accessServer(t, "allow 127.0.0.1; deny all", nil)
	mustStatus(t, ts.get("/vod/a.m3u8"), 200, "GET from 127.0.0.1 under allow 127.0.0.1")
	mustRefused(t, ts.dialFrom("127.0.0.2").do("GET", "/vod/a.m3u8"), "GET from 127.0.0.2 under deny all")
	mustCounted(t, ts, "address", 1)

	ts = accessServer(t, "allow 10.0.0.0/8", nil)
	mustStatus(t, ts.get("/vod/a.m3u8"), 200, "no rule matching allows (nginx: the access phase declines)")
}

// TestAccessThroughTrustedProxy: the rules judge the client a trusted
// proxy names (X-Forwarded-For, Forwarded), never a name an untrusted
// peer sends.
func TestAccessThroughTrustedProxy(t *testing.T) {
	const proxy, stranger = "127.0.0.2", "127.0.0.1"
	for _, tt := range []struct {
		name, header, from string
		hdrs               []string
		want               int
	}{
		{"XFF from the proxy, allowed client", origin.ClientIPHeaderXFF, proxy, []string{"X-Forwarded-For: 198.51.100.7"}, 200},
		{"XFF from the proxy, other client", origin.ClientIPHeaderXFF, proxy, []string{"X-Forwarded-For: 203.0.113.5"}, 403},
		{"XFF spoofed to the left of the proxy's entry", origin.ClientIPHeaderXFF, proxy, []string{"X-Forwarded-For: 198.51.100.7, 203.0.113.5"}, 403},
		{"XFF from an untrusted peer", origin.ClientIPHeaderXFF, stranger, []string{"X-Forwarded-For: 198.51.100.7"}, 403},
		{"the proxy itself, no header", origin.ClientIPHeaderXFF, proxy, nil, 403},
		{"Forwarded from the proxy", origin.ClientIPHeaderForwarded, proxy, []string{"Forwarded: for=198.51.100.7"}, 200},
		{"IPv6 client named by the proxy", origin.ClientIPHeaderXFF, proxy, []string{"X-Forwarded-For: 2001:db8::7"}, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := accessServer(t, "allow 198.51.100.0/24; allow 2001:db8::/32; deny all", func(c *origin.Config) {
				c.TrustedProxies = []string{proxy + "/32"}
				c.ClientIPHeader = tt.header
			})
			r := ts.dialFrom(tt.from).do("GET", "/vod/a.m3u8", tt.hdrs...)
			mustStatus(t, r, tt.want, tt.name)
			n := 0
			if tt.want == 403 {
				n = 1
			}
			mustCounted(t, ts, "address", n)
		})
	}
}

// TestAccessReferers: each Referer as nginx's valid_referers (and "if
// ($invalid_referer) { return 403; }") decides it. The test client sends
// "Host: test".
func TestAccessReferers(t *testing.T) {
	const list = `valid_referers none blocked server_names *.example.com www.example.* example.org/galleries/ ~\.google\.`
	for _, tt := range []struct {
		name, list string
		hdrs       []string
		want       int
		reason     string
	}{
		{"none: no Referer", list, nil, 200, ""},
		{"blocked: a Referer without a scheme", list, []string{"Referer: foo"}, 200, ""},
		{"server_names: the Host", list, []string{"Referer: http://test/player.html"}, 200, ""},
		{"*.example.com", list, []string{"Referer: https://cdn.example.com/x"}, 200, ""},
		{"www.example.*", list, []string{"Referer: http://www.example.net/"}, 200, ""},
		{"a name with its path", list, []string{"Referer: http://example.org/galleries/1"}, 200, ""},
		{"a name, another path", list, []string{"Referer: http://example.org/other"}, 403, "referer_path"},
		{"~regex", list, []string{"Referer: https://www.Google.com/search?q=x"}, 200, ""},
		{"another site", list, []string{"Referer: http://evil.test/"}, 403, "referer_host"},
		{"*.example.com is not example.com", list, []string{"Referer: http://example.com/"}, 403, "referer_host"},
		{"no Referer without none", "valid_referers *.example.com", nil, 403, "referer_none"},
		{"an empty Referer is no none", "valid_referers none *.example.com", []string{"Referer:"}, 403, "referer_blocked"},
		{"no scheme without blocked", "valid_referers *.example.com", []string{"Referer: foo"}, 403, "referer_blocked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := accessServer(t, tt.list, nil)
			r := ts.get("/vod/a.m3u8", tt.hdrs...)
			mustStatus(t, r, tt.want, tt.name)
			if tt.reason != "" {
				mustRefused(t, r, tt.name)
				mustCounted(t, ts, tt.reason, 1)
			}
		})
	}
}

// TestAccessRefusalLogged: a refusal is logged with its reason and the
// client, once per interval however many there are.
func TestAccessRefusalLogged(t *testing.T) {
	var logs syncBuffer
	ts := accessServer(t, "deny all", func(c *origin.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	const n = 20
	for range n {
		mustRefused(t, ts.get("/vod/a.m3u8"), "deny all")
	}
	mustCounted(t, ts, "address", n)
	text := logs.String()
	if !strings.Contains(text, "reason=address") || !strings.Contains(text, "client=127.0.0.1") {
		t.Errorf("no refusal line with reason=address client=127.0.0.1:\n%s", text)
	}
	if got := strings.Count(text, "request refused"); got < 1 || got > 2 {
		t.Errorf("%d refusal lines for %d refusals, want 1 (2 if the test straddles an interval):\n%s", got, n, text)
	}
	// A refusal is the operator's rule, not a file the server may not
	// read: no error line, nothing for SegoriginPermissionDenied.
	if strings.Contains(text, "permission denied") {
		t.Errorf("a refusal logged as a file the server may not read:\n%s", text)
	}
	if got := ts.srv.Stats().FileErrors.ByReason[origin.FilePermissionDenied]; got != 0 {
		t.Errorf("segorigin_file_errors_total{reason=\"permission_denied\"} = %d after %d refusals, want 0", got, n)
	}
}

// TestReloadAccess: new rules take effect on the next request; rules that
// do not parse leave the previous ones in force; empty turns them off.
func TestReloadAccess(t *testing.T) {
	ts := accessServer(t, "", nil)
	c := ts.dial()
	mustStatus(t, c.do("GET", "/vod/a.m3u8"), 200, "no rules")
	reloadAccess := func(rules string) error {
		next := ts.cfg
		next.Access = rules
		_, err := ts.srv.Reload(reloadTo(next))
		return err
	}
	if err := reloadAccess("deny 127.0.0.1"); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	mustStatus(t, c.do("GET", "/vod/a.m3u8"), 403, "after reload to deny, same connection")
	if err := reloadAccess("deny 127.0.0.256"); err == nil || !strings.Contains(err.Error(), "127.0.0.256") {
		t.Fatalf("Reload(-access bad) = %v, want an error naming 127.0.0.256", err)
	}
	mustStatus(t, ts.get("/vod/a.m3u8"), 403, "a bad reload keeps the rules")
	if err := reloadAccess(""); err != nil {
		t.Fatalf("Reload(-access \"\"): %v", err)
	}
	mustStatus(t, ts.get("/vod/a.m3u8"), 200, "rules off")
}

// TestAccessRefusedAtStart: rules that do not parse stop New, naming the
// flag.
func TestAccessRefusedAtStart(t *testing.T) {
	cfg := origin.DefaultConfig()
	cfg.Root = t.TempDir()
	cfg.Access = "allow 10.0.0.0/8; deny everyone"
	_, err := origin.New(cfg)
	if err == nil || !strings.Contains(err.Error(), "-access:") || !strings.Contains(err.Error(), `"everyone"`) {
		t.Fatalf("New with %q = %v, want an error naming -access and the argument", cfg.Access, err)
	}
}
