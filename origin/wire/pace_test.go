package wire

import (
	"testing"
	"time"
)

func TestAllowance(t *testing.T) {
	const s = int64(time.Second)
	cases := []struct {
		name        string
		rate, after int64
		began, now  int64
		sent        int64
		want        int64
	}{
		{"no rate: no limit", 0, 0, 0, 0, 1 << 40, 1<<63 - 1 - 1<<40},
		{"first quantum at once", 1000, 0, 0, 0, 0, 100},
		{"a second on", 1000, 0, 0, s, 0, 1100},
		{"what was sent counts", 1000, 0, 0, s, 1100, 0},
		{"over: negative", 1000, 0, 0, 0, 150, -50},
		{"after: at full speed first", 1000, 5000, 0, 0, 0, 5100},
		{"after spent, then the rate", 1000, 5000, 0, 2 * s, 5000, 2100},
		{"clock before Began", 1000, 0, 10 * s, 9 * s, 0, 100},
		{"days at 10 GB/s: no overflow", 10 << 30, 0, 0, 3 * 86400 * s, 0, (10 << 30) * (3*86400*10 + 1) / 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Response{Rate: c.rate, RateAfter: c.after}
			r.Cursor.Began, r.Cursor.Sent = c.began, c.sent
			if c.rate == 0 {
				c.want = 1<<63 - 1
			}
			got := r.Allowance(c.now)
			tol := int64(0)
			if c.rate > 1<<20 {
				tol = 1 << 12 // float64 rounding at 10 GB/s over days
			}
			if got < c.want-tol || got > c.want+tol {
				t.Errorf("Allowance(rate %d, after %d, %d ns on, %d sent) = %d, want %d", c.rate, c.after, c.now-c.began, c.sent, got, c.want)
			}
		})
	}
}
