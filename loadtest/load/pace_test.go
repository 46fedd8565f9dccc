package load

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseBitrate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"2000000", 2e6, true},
		{"2Mbit", 2e6, true},
		{"2mbit/s", 2e6, true},
		{"1.5Mbit", 1.5e6, true},
		{"640kbit", 640e3, true},
		{"1Gbit", 1e9, true},
		{"800bit", 800, true},
		{"0", 0, true},
		{"", 0, false},
		{"2MiB", 0, false},
		{"-1Mbit", 0, false},
		{"fast", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBitrate(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseBitrate(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

// chunks reads at most n bytes per Read, like a socket.
type chunks struct {
	r io.Reader
	n int
}

func (c chunks) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestPacedReader(t *testing.T) {
	const size, bitrate = 100 << 10, 4e6 // 100 KiB at 4 Mbit/s: 205 ms
	want := time.Duration(size * 8 / bitrate * float64(time.Second))
	for _, chunk := range []int{1 << 10, 16 << 10, 64 << 10, size} {
		t.Run(strconv.Itoa(chunk), func(t *testing.T) {
			p := newPacer(bitrate)
			start := time.Now()
			n, err := io.Copy(io.Discard, p.reader(context.Background(), chunks{bytes.NewReader(make([]byte, size)), chunk}))
			took := time.Since(start)
			if n != size || err != nil {
				t.Fatalf("copy = %d, %v; want %d, nil", n, err, size)
			}
			if took < want || took > 3*want {
				t.Fatalf("%d bytes at %v bit/s in %d-byte reads took %v, want at least %v and under %v", size, bitrate, chunk, took, want, 3*want)
			}
		})
	}
}

func TestPacedReaderCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	p := newPacer(8e3) // 1 KB a second: 64 KiB would take a minute
	start := time.Now()
	_, err := io.Copy(io.Discard, p.reader(ctx, bytes.NewReader(make([]byte, 64<<10))))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("paced copy after its context ended: %v after %v, want the deadline's error at once", err, time.Since(start))
	}
}

// TestRunPaced: whole runs against a server that holds each response's
// headers back for a while: the fetch time holds the pacing, the TTFB the
// delay and not the pacing, and both reach the report.
func TestRunPaced(t *testing.T) {
	const delay = 60 * time.Millisecond
	dir := smallSet(t)
	fs := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		fs.ServeHTTP(w, r)
	}))
	defer srv.Close()
	w1, _ := WorkloadPlan("W1", 3, 64<<10)
	const bitrate = 2e6
	body := time.Duration(64 << 10 * 8 / bitrate * float64(time.Second)) // 262 ms
	tests := []struct {
		name      string
		bitrate   float64
		pause     time.Duration
		fetchLow  time.Duration // the least fetch p50
		fetchHigh time.Duration // fetch p50 under this
		elapsed   time.Duration // the least time for the run's requests
	}{
		{"unpaced", 0, 0, delay, delay + body/2, 3 * delay},
		{"paced", bitrate, 0, delay + body, 3 * (delay + body), 3 * (delay + body)},
		{"paced with pauses", bitrate, 100 * time.Millisecond, delay + body, 3 * (delay + body), 3*(delay+body) + 2*100*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Config{
				URL: srv.URL, Plan: w1, Sessions: 1, Requests: 3, Duration: 10 * time.Second,
				Bitrate: tt.bitrate, Pause: tt.pause,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 3 || res.Errors != 0 {
				t.Fatalf("Run: %d requests, %d errors; want 3, 0 (%v)", res.Requests, res.Errors, res.ErrorSamples)
			}
			// A percentile is the middle of its histogram bucket: up to 1/64
			// below the samples in it.
			low := func(d time.Duration) time.Duration { return d - d/64 }
			if res.P50 < low(tt.fetchLow) || res.P50 > tt.fetchHigh {
				t.Errorf("fetch p50 %v, want between %v and %v", res.P50, tt.fetchLow, tt.fetchHigh)
			}
			if res.Elapsed < tt.elapsed {
				t.Errorf("3 requests took %v, want at least %v", res.Elapsed, tt.elapsed)
			}
			if res.TTFBP50 < low(delay) || res.TTFBP99 > delay+body/2 || res.TTFBMax > res.Max {
				t.Errorf("ttfb p50 %v p99 %v max %v (fetch max %v), want at least %v, without the body's %v, at most the fetch",
					res.TTFBP50, res.TTFBP99, res.TTFBMax, res.Max, delay, body)
			}
			var out strings.Builder
			res.WriteReport(&out)
			kv := resultLine(t, out.String())
			for key, want := range map[string]time.Duration{"ttfb_p50_us": res.TTFBP50, "ttfb_p99_us": res.TTFBP99, "p99_us": res.P99} {
				if kv[key] != strconv.FormatInt(want.Microseconds(), 10) {
					t.Errorf("RESULT %s=%s, want %d\n%s", key, kv[key], want.Microseconds(), out.String())
				}
			}
			if paced := strings.Contains(out.String(), "\npaced     2 Mbit/s a session"); paced != (tt.bitrate > 0) {
				t.Errorf("report names the pacing: %v, want %v\n%s", paced, tt.bitrate > 0, out.String())
			}
		})
	}
}

// resultLine returns the key=value pairs of the report's RESULT line.
func resultLine(t *testing.T, report string) map[string]string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^RESULT .*$`).FindString(report)
	if line == "" {
		t.Fatalf("no RESULT line in:\n%s", report)
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(line)[1:] {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	return kv
}
