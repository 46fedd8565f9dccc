package load

import (
	"fmt"
	"io"
	"time"
)

// Result is what a run measured.
type Result struct {
	Plan     string // what the sessions walked
	Sessions int
	Requests int64 // finished requests, failed ones included
	Errors   int64 // failed requests
	Bytes    int64 // body bytes received, of bodies cut off by the run's end too
	Elapsed  time.Duration

	// Latency of successful requests, from sending the request to the
	// body's last byte; percentiles within 1.6%. With Bitrate set it
	// includes the pacing.
	P50, P90, P99, P999, Max, Mean time.Duration

	// Time to first byte of successful requests: from the request
	// written (the dial of a new connection not counted) to the
	// response's headers read; percentiles within 1.6%.
	TTFBP50, TTFBP90, TTFBP99, TTFBP999, TTFBMax, TTFBMean time.Duration

	Bitrate float64       // each session's cap on body reads, bits a second; 0: unpaced
	Pause   time.Duration // each session's wait after a response

	// ErrorSamples are the first errors, each a *RequestError naming the
	// URL, the Range and, for a wrong byte, the file offset.
	ErrorSamples []error

	IdleOpen   int // idle connections still open at the end
	IdleLost   int // idle connections the server closed during the run
	IdleFailed int // idle connections that could not be set up
}

// RequestsPerSecond is the throughput in requests.
func (r Result) RequestsPerSecond() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// MiBPerSecond is the throughput in body bytes, MiB (2^20 bytes) a second.
func (r Result) MiBPerSecond() float64 {
	return float64(r.Bytes) / (1 << 20) / r.Elapsed.Seconds()
}

// WriteReport writes the result for people, then a one-line summary that
// starts with "RESULT" for scripts.
func (r Result) WriteReport(w io.Writer) {
	fmt.Fprintf(w, "plan      %s, %d sessions\n", r.Plan, r.Sessions)
	if r.Bitrate > 0 || r.Pause > 0 {
		fmt.Fprintf(w, "paced     %s a session, %v pause after each response\n", FormatBitrate(r.Bitrate), r.Pause)
	}
	fmt.Fprintf(w, "requests  %d in %.2fs: %.1f req/s, %.1f MiB/s (%d body bytes)\n",
		r.Requests, r.Elapsed.Seconds(), r.RequestsPerSecond(), r.MiBPerSecond(), r.Bytes)
	fmt.Fprintf(w, "latency   p50 %v  p90 %v  p99 %v  p999 %v  max %v  mean %v\n",
		round(r.P50), round(r.P90), round(r.P99), round(r.P999), round(r.Max), round(r.Mean))
	fmt.Fprintf(w, "ttfb      p50 %v  p90 %v  p99 %v  p999 %v  max %v  mean %v\n",
		round(r.TTFBP50), round(r.TTFBP90), round(r.TTFBP99), round(r.TTFBP999), round(r.TTFBMax), round(r.TTFBMean))
	if r.IdleOpen+r.IdleLost+r.IdleFailed > 0 {
		fmt.Fprintf(w, "idle      %d open at the end, %d closed by the server, %d failed to open\n",
			r.IdleOpen, r.IdleLost, r.IdleFailed)
	}
	fmt.Fprintf(w, "errors    %d\n", r.Errors)
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(w, "  %v\n", e)
	}
	if int64(len(r.ErrorSamples)) < r.Errors {
		fmt.Fprintf(w, "  ... and %d more\n", r.Errors-int64(len(r.ErrorSamples)))
	}
	fmt.Fprintf(w, "RESULT requests=%d errors=%d bytes=%d seconds=%.3f rps=%.1f mibps=%.1f p50_us=%d p90_us=%d p99_us=%d p999_us=%d "+
		"ttfb_p50_us=%d ttfb_p90_us=%d ttfb_p99_us=%d ttfb_p999_us=%d ttfb_max_us=%d idle_open=%d idle_lost=%d\n",
		r.Requests, r.Errors, r.Bytes, r.Elapsed.Seconds(), r.RequestsPerSecond(), r.MiBPerSecond(),
		r.P50.Microseconds(), r.P90.Microseconds(), r.P99.Microseconds(), r.P999.Microseconds(),
		r.TTFBP50.Microseconds(), r.TTFBP90.Microseconds(), r.TTFBP99.Microseconds(), r.TTFBP999.Microseconds(), r.TTFBMax.Microseconds(),
		r.IdleOpen, r.IdleLost)
}

// round keeps three significant figures or so for display.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Microsecond)
	default:
		return d.Round(100 * time.Nanosecond)
	}
}
