package load

import (
	"math/bits"
	"time"
)

// histogram counts durations in log-linear buckets: exact below 128 ns,
// then 64 buckets per power of two, so a reported percentile is within
// 1/64 (1.6%) of the true value. It has a fixed size and no allocation per
// sample; one per session, merged at the end. Not safe for concurrent use.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

const (
	histSub     = 64           // buckets per power of two
	histBuckets = 59 * histSub // shift ≤ 57 for a 64-bit value: index ≤ 57*64+127
)

// bucket returns v's bucket index.
func bucket(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 7 // keep the top 7 bits: 64..127
	return shift*histSub + int(v>>shift)
}

// lowest returns the smallest value in bucket i.
func lowest(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	return uint64(i%histSub+histSub) << shift
}

func (h *histogram) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucket(uint64(d))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// quantile returns the value below which a fraction q of the samples lie:
// the middle of the bucket holding the sample of rank ceil(q*n), capped at
// the largest sample seen.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := lowest(i), lowest(i+1)
			return min(time.Duration(lo+(hi-lo)/2), h.max)
		}
	}
	return h.max
}

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}
