package origin_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/admin"
	"segorigin/origin/token"
)

// TestRefusalsRateLimited: a flood of unparseable requests and of bad
// paths is counted request by request, but logged at most once per
// interval per kind, fasthttp's own lines (which echo request bytes)
// included; the next line let through says how many were held back.
func TestRefusalsRateLimited(t *testing.T) {
	var logs syncBuffer
	ts := startServer(t, "", func(c *origin.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	const n = 40
	for i := range n {
		// Each its own connection: fasthttp logs once per failed connection.
		rawExchange(t, ts.addr, fmt.Sprintf("GARBAGE-%d \x01\x02 ECHOED-BYTES\r\n\r\n", i))
		c := ts.dial()
		mustStatus(t, c.do("GET", fmt.Sprintf("/bad%%zz%d/t/%s/x", i, strings.Repeat("A", 40))), 400, "bad escape")
	}
	st := ts.srv.Stats
	waitFor(t, 2*time.Second, "every refusal counted", func() bool {
		return st().BadRequests == n && st().BadPaths == n
	})
	text := logs.String()
	// The test runs well inside one 10 s interval, but may straddle the
	// start of a second one.
	const bound = 2
	for _, kind := range []string{"unparseable request", "bad request path", "component=fasthttp"} {
		if got := strings.Count(text, kind); got > bound {
			t.Errorf("%d lines of %q for %d requests, want at most %d:\n%.2000s", got, kind, n, bound, text)
		}
	}
	// Each line that is let through echoes a little of the request,
	// bounded: the lines' total size does not grow with n.
	if len(text) > 4*bound*1024 {
		t.Errorf("%d bytes of log for %d refused requests, want at most %d", len(text), 2*n, 4*bound*1024)
	}
	if lines := strings.Count(text, "\n"); lines > 4*bound {
		t.Errorf("%d log lines for %d refused requests, want at most %d:\n%s", lines, 2*n, 4*bound, text)
	}
	rec := httptest.NewRecorder()
	admin.Handler(ts.srv, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		fmt.Sprintf("segorigin_bad_requests_total %d", n),
		fmt.Sprintf("segorigin_bad_paths_total %d", n),
		`segorigin_log_suppressed_total{kind="bad_path"}`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(text, "suppressed=0") {
		t.Errorf("first lines should say suppressed=0:\n%s", text)
	}
}

// TestLoggedRequestBytesRedacted: a token in a request the server refuses
// (unparseable, or a bad path) reaches the process log only redacted,
// the parser's echo of the request bytes in the "unparseable request"
// line included, on both engines (one HTTP/1 layer).
func TestLoggedRequestBytesRedacted(t *testing.T) {
	for _, engine := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(engine), func(t *testing.T) { testLoggedRequestBytesRedacted(t, engine) })
	}
}

func testLoggedRequestBytesRedacted(t *testing.T, engine origin.Engine) {
	var logs syncBuffer
	ts, key := signingServer(t, func(c *origin.Config) {
		c.Engine = engine
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	echo := "unparseable request"
	tok := mustSign(t, key, token.Claims{Expiry: time.Now().Add(time.Hour), ACL: []string{"/vod/*"}, KeyID: "k1"})
	seg := token.PathSegment(tok)
	rawExchange(t, ts.addr, "GARBAGE /t/"+seg+"/vod/a.ts \x01\r\n\r\n")
	mustStatus(t, ts.get("/t/"+seg+"/vod/%zz"), 400, "bad escape after a token")
	rawExchange(t, ts.addr, "GARBAGE /vod/a.ts?token="+url.QueryEscape(tok)+" \x01\r\n\r\n")
	waitFor(t, 2*time.Second, "the refusals logged", func() bool {
		return strings.Contains(logs.String(), "bad request path") && strings.Contains(logs.String(), echo)
	})
	text := logs.String()
	for _, secret := range []string{seg, tok[strings.LastIndex(tok, "=")+1:]} {
		if strings.Contains(text, secret) {
			t.Errorf("the process log holds a token (%.20s...):\n%s", secret, text)
		}
	}
	if !strings.Contains(text, "/t/…/vod/%zz") {
		t.Errorf("bad path line lacks the redacted path /t/…/vod/%%zz:\n%s", text)
	}
	if !strings.Contains(text, `GARBAGE /t/…/vod/a.ts`) {
		t.Errorf("the echo of the request lacks the redacted path:\n%s", text)
	}
}
