package origin_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/accesslog"
)

// TestLogLinesBounded: no request makes a long log line. With 1 MiB of
// header allowed, requests with 8 KiB header values of bytes that escaping
// lengthens (0xff is \xFF in a combined line, \ufffd in JSON) and with
// 500 KiB paths write combined lines under 4,096 bytes (GoAccess splits
// longer ones), JSON lines within accesslog.MaxJSONLine, and process log
// lines (the bad-path line echoes the raw path) under 2 KiB.
func TestLogLinesBounded(t *testing.T) {
	ff := strings.Repeat("\xff", 8<<10)
	requests := []struct {
		target  string
		headers []string
		want    int
	}{
		{"/a.txt", []string{"User-Agent: " + ff, "Referer: " + ff, "Range: bytes=0-1," + ff}, 200},
		{"/a.txt?" + strings.Repeat("q=%22", 100<<10), []string{"User-Agent: " + strings.Repeat(`"\`, 4<<10)}, 200},
		{"/" + strings.Repeat("a", 500<<10), nil, 404},
		{"/%zz" + strings.Repeat("%ff", 150<<10), []string{"X-Pad: " + ff}, 400},
	}
	for _, tt := range []struct {
		format accesslog.Format
		bound  int
	}{{accesslog.Combined, 4095}, {accesslog.JSON, accesslog.MaxJSONLine}} {
		t.Run(tt.format.String(), func(t *testing.T) {
			var access, proc syncBuffer
			ts := startServer(t, "", func(c *origin.Config) {
				c.MaxHeaderBytes = 1 << 20
				c.AccessLog, c.AccessLogFormat = &access, tt.format
				c.Logger = slog.New(slog.NewTextHandler(&proc, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			writeFile(t, ts.root, "a.txt", "AAAA")
			for _, r := range requests {
				c := ts.dial()
				mustStatus(t, c.do("GET", r.target, r.headers...), r.want, "GET "+r.target[:min(len(r.target), 20)]+"...")
			}
			waitFor(t, 2*time.Second, "an access line per request", func() bool {
				return strings.Count(access.String(), "\n") == len(requests)
			})
			for _, line := range strings.SplitAfter(access.String(), "\n") {
				if len(line) > tt.bound {
					t.Errorf("%v access line of %d bytes, want at most %d: %.200q...", tt.format, len(line), tt.bound, line)
				}
			}
			text := proc.String()
			if !strings.Contains(text, "bad request path") {
				t.Errorf("process log lacks the bad-path line:\n%.2000s", text)
			}
			for _, line := range strings.SplitAfter(text, "\n") {
				if len(line) > 2048 {
					t.Errorf("process log line of %d bytes, want at most 2048: %.200q...", len(line), line)
				}
			}
		})
	}
}
