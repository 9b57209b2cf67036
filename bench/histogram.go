package bench

import (
	"math/bits"
	"time"
)

// Histogram records latencies in log-linear buckets, as HDR histograms do:
// 32 buckets per power of two, so every value is kept within about 3% (the
// value reported is the bucket's midpoint), in fixed memory, whatever the
// number of samples. The maximum is exact. Not safe for concurrent use:
// give each client its own and Merge them.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	subBits     = 6
	halfSub     = 1 << (subBits - 1) // 32 buckets per power of two
	histBuckets = 64*halfSub + 2*halfSub
)

func bucketOf(ns uint64) int {
	if ns < 2*halfSub {
		return int(ns)
	}
	e := bits.Len64(ns) - subBits
	return e*halfSub + int(ns>>e)
}

// bucketMid is the midpoint of bucket i, in nanoseconds.
func bucketMid(i int) uint64 {
	if i < 2*halfSub {
		return uint64(i)
	}
	e := i/halfSub - 1
	m := uint64(i - e*halfSub)
	lo := m << e
	return lo + (uint64(1)<<e)/2
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := bucketOf(uint64(d))
	if i >= histBuckets {
		i = histBuckets - 1
	}
	h.counts[i]++
	h.n++
	if d > h.max {
		h.max = d
	}
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	if o.max > h.max {
		h.max = o.max
	}
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Percentile returns the latency at or below which q (0-1) of the samples lie.
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := time.Duration(bucketMid(i))
			if v > h.max {
				v = h.max
			}
			return v
		}
	}
	return h.max
}
