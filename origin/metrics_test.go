package origin_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
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

// Reset empties b.
func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLoopMetrics: /metrics exports what the event loops counted: their
// wake-ups and sends, a send that filled a slow reader's socket buffer, a
// park once the loop had nothing to do, and a connection closed for
// idling past -idle-timeout (which the client sees as the end of the
// stream).
func TestLoopMetrics(t *testing.T) {
	ts := startServer(t, "", func(c *origin.Config) {
		c.Engine = origin.EngineLoop
		c.Loops = 1
		c.IdleTimeout = 300 * time.Millisecond
	})
	writeSynth(t, ts.root, "big.ts", 8<<20)
	c := ts.dial()
	mustStatus(t, c.do("GET", "/missing.ts"), 404, "a missing file")
	// A reader that takes nothing: 8 MiB cannot fit in the socket
	// buffers, so a send comes up short and the response waits.
	slow := ts.dial()
	slow.write("GET", "/big.ts")
	waitFor(t, 10*time.Second, "a short send", func() bool { return ts.srv.Stats().Loop.ShortSends > 0 })
	if _, err := io.Copy(io.Discard, io.LimitReader(slow.br, 8<<20)); err != nil {
		t.Fatalf("reading the big response: %v", err)
	}
	// c, idle since its 404, is closed by the idle timeout.
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("idle connection after -idle-timeout: read %d bytes, %v; want the end of the stream", n, err)
	}
	waitFor(t, 10*time.Second, "a timeout and a park counted", func() bool {
		st := ts.srv.Stats().Loop
		return st.Timeouts > 0 && st.Parks > 0
	})
	st := ts.srv.Stats().Loop
	if st.Wakeups == 0 || st.Sends < 3 {
		t.Errorf("loop stats %+v: want wake-ups and at least 3 sends", st)
	}
	rec := httptest.NewRecorder()
	admin.Handler(ts.srv, func() bool { return true }).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for name, min := range map[string]int64{
		"segorigin_loop_wakeups_total": st.Wakeups, "segorigin_loop_parks_total": st.Parks,
		"segorigin_loop_sends_total": st.Sends, "segorigin_loop_short_sends_total": st.ShortSends,
		"segorigin_loop_timeouts_total": st.Timeouts,
	} {
		m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		if v, _ := strconv.ParseInt(m[1], 10, 64); v < min {
			t.Errorf("%s = %d, want at least %d (counted before the scrape)", name, v, min)
		}
	}
}
