package load

import (
	"math"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 123456789, 1 << 40, math.MaxInt64} {
		i := bucket(v)
		if lo, hi := lowest(i), lowest(i+1); v < lo || (hi > lo && v >= hi) {
			t.Errorf("bucket(%d) = %d holding [%d, %d), want it to hold %d", v, i, lo, hi, v)
		}
		if i >= histBuckets {
			t.Errorf("bucket(%d) = %d, beyond %d buckets", v, i, histBuckets)
		}
	}
}

func TestQuantile(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, 1000 * time.Microsecond}}
	for _, tt := range tests {
		got := h.quantile(tt.q)
		if rel := math.Abs(float64(got-tt.want)) / float64(tt.want); rel > 1.0/64 {
			t.Errorf("quantile(%v) = %v, want %v within 1/64", tt.q, got, tt.want)
		}
	}
	var m histogram
	m.merge(&h)
	m.merge(&h)
	if m.n != 2000 || m.max != time.Millisecond || m.mean() != h.mean() {
		t.Errorf("merged twice: n %d max %v mean %v, want 2000, 1ms, %v", m.n, m.max, m.mean(), h.mean())
	}
	var empty histogram
	if got := empty.quantile(0.99); got != 0 {
		t.Errorf("empty quantile = %v, want 0", got)
	}
}
