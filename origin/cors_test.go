package origin_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
)

// TestCORSPreflightCMCD: a player in CMCD header mode (CTA-5004 §3.2)
// sends CMCD-Request, -Object, -Session and -Status cross-origin, which
// are not CORS-safelisted: the preflight must allow them, or the browser
// refuses every segment request.
func TestCORSPreflightCMCD(t *testing.T) {
	ts := rangeRoot(t)
	r := ts.do("OPTIONS", "/test/digits.txt", "Origin: https://player.example", "Access-Control-Request-Method: GET",
		"Access-Control-Request-Headers: cmcd-object,cmcd-request,cmcd-session,cmcd-status,range")
	mustStatus(t, r, 204, "preflight")
	allowed := map[string]bool{}
	for _, h := range strings.Split(r.header("Access-Control-Allow-Headers"), ",") {
		allowed[strings.ToLower(strings.TrimSpace(h))] = true
	}
	for _, h := range []string{"cmcd-object", "cmcd-request", "cmcd-session", "cmcd-status", "range", "if-range", "authorization"} {
		if !allowed[h] {
			t.Errorf("preflight Access-Control-Allow-Headers = %q, lacks %s", r.header("Access-Control-Allow-Headers"), h)
		}
	}
}

// TestCORSConfigured: allowed headers and max age come from the
// configuration.
func TestCORSConfigured(t *testing.T) {
	ts := startServer(t, "", func(c *origin.Config) {
		c.CORSAllowHeaders = []string{"Range", "X-Player"}
		c.CORSMaxAge = 10 * time.Minute
	})
	r := ts.do("OPTIONS", "/x.ts", "Origin: https://p.example", "Access-Control-Request-Method: GET")
	mustHeader(t, r, "Access-Control-Allow-Headers", "Range, X-Player", "preflight")
	mustHeader(t, r, "Access-Control-Max-Age", "600", "preflight")
}

// TestCORSCredentials: with credentials, the allowed origin is echoed (never
// "*", which Fetch refuses for a credentialed request), with
// Access-Control-Allow-Credentials, on responses and preflights; another
// origin gets neither.
func TestCORSCredentials(t *testing.T) {
	ts := startServer(t, "", func(c *origin.Config) {
		c.CORSOrigins = []string{"https://player.example"}
		c.CORSCredentials = true
	})
	writeFile(t, ts.root, "a.m3u8", "#EXTM3U\n")
	c := ts.dial()
	for _, tt := range []struct {
		what   string
		r      *response
		status int
	}{
		{"GET", c.do("GET", "/a.m3u8", "Origin: https://player.example", "Cookie: segorigin_token=x"), 200},
		{"404", c.do("GET", "/b.m3u8", "Origin: https://player.example"), 404},
		{"preflight", c.do("OPTIONS", "/a.m3u8", "Origin: https://player.example", "Access-Control-Request-Method: GET",
			"Access-Control-Request-Headers: cmcd-request"), 204},
	} {
		mustStatus(t, tt.r, tt.status, tt.what)
		mustHeader(t, tt.r, "Access-Control-Allow-Origin", "https://player.example", tt.what)
		mustHeader(t, tt.r, "Access-Control-Allow-Credentials", "true", tt.what)
		mustHeader(t, tt.r, "Timing-Allow-Origin", "https://player.example", tt.what)
		mustHeader(t, tt.r, "Vary", "Origin", tt.what)
	}
	r := c.do("GET", "/a.m3u8", "Origin: https://evil.example")
	mustHeader(t, r, "Access-Control-Allow-Origin", "", "other origin")
	mustHeader(t, r, "Access-Control-Allow-Credentials", "", "other origin")
	mustHeader(t, r, "Timing-Allow-Origin", "", "other origin")
}

func TestCORSCredentialsRefusedWithAnyOrigin(t *testing.T) {
	for _, origins := range [][]string{{"*"}, nil, {"https://a.example", "*"}} {
		cfg := origin.DefaultConfig()
		cfg.Root = t.TempDir()
		cfg.CORSOrigins = origins
		cfg.CORSCredentials = true
		if _, err := origin.New(cfg); err == nil || !strings.Contains(err.Error(), "cors-credentials") {
			t.Errorf("New(CORSCredentials, origins %q): err = %v, want refused", origins, err)
		}
	}
}

// TestNoSniffEverywhere: X-Content-Type-Options: nosniff on file
// responses, errors and requests fasthttp could not parse.
func TestNoSniffEverywhere(t *testing.T) {
	ts := rangeRoot(t)
	c := ts.dial()
	for _, target := range []string{"/test/digits.txt", "/nope", "/%00"} {
		mustHeader(t, c.do("GET", target), "X-Content-Type-Options", "nosniff", "GET "+target)
	}
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n")
	raw, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(raw), "HTTP/1.1 400") || !strings.Contains(string(raw), "X-Content-Type-Options: nosniff\r\n") {
		t.Errorf("unparseable request: response %q, want a 400 with X-Content-Type-Options: nosniff", trunc(raw))
	}
}
