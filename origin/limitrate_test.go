package origin_test

import (
	"bufio"
	"io"
	"net/http"
	"testing"
	"time"

	"segorigin/origin"
)

// TestLimitRate: with -limit-rate a download takes about the time its
// rate says (nginx's limit_rate: per connection, the first quantum at
// once), and with -limit-rate-after its first bytes come at full speed.
// The durations are measured on the monotonic clock and logged as a
// ratio to what the rate says; the assertions are loose bounds only (a
// shared machine can be slow, never faster than the rate allows).
func TestLimitRate(t *testing.T) {
	for _, eng := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(eng), func(t *testing.T) { testLimitRate(t, eng) })
	}
}

func testLimitRate(t *testing.T, eng origin.Engine) {
	const (
		size  = 1 << 20
		rate  = 512 << 10
		after = 768 << 10
	)
	root := t.TempDir()
	writeSynth(t, root, "seg.mp4", size)
	want := synthBytes("seg.mp4", 0, size)

	t.Run("limit-rate", func(t *testing.T) {
		ts := startServer(t, root, func(c *origin.Config) { c.Engine, c.LimitRate = eng, rate })
		began := time.Now()
		r := ts.get("/seg.mp4")
		took := time.Since(began)
		mustStatus(t, r, 200, "GET at -limit-rate 512 KiB/s")
		mustBody(t, r, want, "GET at -limit-rate 512 KiB/s")
		// The first 100 ms' worth leaves at once: 2 s - 0.1 s.
		expect := time.Duration(float64(size)/rate*float64(time.Second)) - 100*time.Millisecond
		t.Logf("%d bytes at %d B/s: %v, %.2f of the %v the rate says", size, rate, took, took.Seconds()/expect.Seconds(), expect)
		if took < time.Second || took > 5*expect {
			t.Errorf("1 MiB at 512 KiB/s took %v, want between 1 s and %v (the rate says %v)", took, 5*expect, expect)
		}
	})

	t.Run("limit-rate-after", func(t *testing.T) {
		ts := startServer(t, root, func(c *origin.Config) { c.Engine, c.LimitRate, c.LimitRateAfter = eng, rate, after })
		c := ts.dial()
		began := time.Now()
		c.write("GET", "/seg.mp4")
		br := bufio.NewReader(c.conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		const first = 640 << 10 // within -limit-rate-after, header included
		head := make([]byte, first)
		if _, err := io.ReadFull(resp.Body, head); err != nil {
			t.Fatal(err)
		}
		fast := time.Since(began)
		rest, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(began)
		body := append(head, rest...)
		if string(body) != string(want) {
			t.Fatalf("body (%d bytes) differs from the file (%d bytes) at %d", len(body), len(want), firstDiff(body, want))
		}
		atRate := time.Duration(float64(first) / rate * float64(time.Second))
		expect := time.Duration(float64(size-after)/rate*float64(time.Second)) - 100*time.Millisecond
		t.Logf("first %d bytes in %v (%.3f of the %v the rate alone would take); all in %v, %.2f of the %v the rate says after %d bytes",
			first, fast, fast.Seconds()/atRate.Seconds(), atRate, took, took.Seconds()/expect.Seconds(), expect, after)
		if fast > atRate/2 {
			t.Errorf("the first %d bytes took %v, want full speed (under %v; the rate alone would take %v)", first, fast, atRate/2, atRate)
		}
		if took < expect/2 {
			t.Errorf("the rest after -limit-rate-after took %v in all, want at least %v (the rate says %v)", took, expect/2, expect)
		}
	})
}
