package origin_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/admin"
)

// TestMetricsEndpoint: the admin handler exports what the server counted.
func TestMetricsEndpoint(t *testing.T) {
	ts := rangeRoot(t)
	c := ts.dial()
	c.do("GET", "/seg.m4s")
	c.do("GET", "/seg.m4s", "Range: bytes=0-9")
	c.do("GET", "/missing.ts")
	waitFor(t, 5*time.Second, "both bodies counted", func() bool { return ts.srv.Stats().Transport.SendfileResponses == 2 })
	h := admin.Handler(ts.srv, func() bool { return true })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`segorigin_body_bytes_total{path="sendfile"} 100010`,
		`segorigin_body_responses_total{path="sendfile"} 2`,
		`segorigin_responses_total{class="4xx"} 1`,
		`segorigin_responses_by_code_total{code="200"} 1`,
		`segorigin_responses_by_code_total{code="206"} 1`,
		`segorigin_responses_by_code_total{code="404"} 1`,
		`segorigin_responses_by_code_total{code="other"} 0`,
		`segorigin_response_seconds_count{kind="error"} 1`,
		`segorigin_root_available 1`,
		`segorigin_root_unavailable_total 0`,
		`segorigin_file_responses_total{kind="segment"} 2`,
		`segorigin_cold_checked_total{kind="segment"} 2`,
		`segorigin_cold_resident_total{kind="segment"} 2`,
		`segorigin_cache_operations_total{op="negative_hit"} 0`,
		`segorigin_response_seconds_count{kind="segment"} 2`,
		`segorigin_watcher_degraded 0`,
		`segorigin_cache_negative_bytes 266`, // "missing.ts" plus 256
		`segorigin_proxy_protocol_total{outcome="accepted"} 0`,
		`segorigin_readahead_refused_total{reason="unauthorized"} 0`,
		`go_goroutines`,
		`process_open_fds`,
		// The second GET of seg.m4s is a hit unless a late watcher
		// event for the file just written invalidated it: the metric
		// must say what the cache counted, whichever happened.
		fmt.Sprintf(`segorigin_cache_operations_total{op="hit"} %d`, ts.srv.CacheStats().Hits),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for path, code := range map[string]int{"/healthz": 200, "/readyz": 200, "/debug/pprof/": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != code {
			t.Errorf("GET %s = %d, want %d", path, rec.Code, code)
		}
	}
	rec = httptest.NewRecorder()
	admin.Handler(ts.srv, func() bool { return false }).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 503 {
		t.Errorf("/readyz while draining = %d, want 503", rec.Code)
	}
}

// TestAccessLog: one combined line per response (nginx's format, which
// GoAccess reads; cmd/segorigin feeds it to goaccess itself), and sampling.
func TestAccessLog(t *testing.T) {
	var buf syncBuffer
	ts := startServer(t, "", func(c *origin.Config) {
		c.AccessLog = &buf
	})
	writeSynth(t, ts.root, "v/seg.m4s", 50_000)
	c := ts.dial()
	c.do("GET", "/v/seg.m4s", "Range: bytes=100-199", `User-Agent: hls.js "1.7"`)
	c.do("HEAD", "/v/seg.m4s", "Referer: https://p.example/")
	c.do("GET", "/v/nope.m4s?x=1")
	waitFor(t, 2*time.Second, "three access lines", func() bool { return strings.Count(buf.String(), "\n") == 3 })
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for i, want := range []string{
		`^127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "GET /v/seg\.m4s HTTP/1\.1" 206 100 "-" "hls\.js \\x221\.7\\x22"$`,
		`^127\.0\.0\.1 - - \[[^]]+\] "HEAD /v/seg\.m4s HTTP/1\.1" 200 0 "https://p\.example/" "-"$`,
		`^127\.0\.0\.1 - - \[[^]]+\] "GET /v/nope\.m4s\?x=1 HTTP/1\.1" 404 14 "-" "-"$`,
	} {
		if i >= len(lines) || !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("access line %d of %q, want it to match %s", i, lines, want)
		}
	}

	var sampled syncBuffer
	ts2 := startServer(t, ts.root, func(c *origin.Config) {
		c.AccessLog = &sampled
		c.AccessLogSample = 10
	})
	c2 := ts2.dial()
	for range 30 {
		c2.do("HEAD", "/v/seg.m4s")
	}
	if n := strings.Count(sampled.String(), "\n"); n != 3 {
		t.Errorf("1-in-10 sampling logged %d of 30, want 3", n)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex // protects buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
