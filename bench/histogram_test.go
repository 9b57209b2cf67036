package bench

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestHistogramAccuracy(t *testing.T) {
	var h Histogram
	var all []time.Duration
	for i := 0; i < 100000; i++ {
		d := time.Duration(rand.ExpFloat64() * float64(3*time.Millisecond))
		h.Record(d)
		all = append(all, d)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all)))-1]
		got := h.Percentile(q)
		if diff := float64(got-exact) / float64(exact); diff > 0.04 || diff < -0.04 {
			t.Errorf("p%v = %s, exact %s (%.1f%% off)", q*100, got, exact, diff*100)
		}
	}
	if h.Max() != all[len(all)-1] || h.Count() != 100000 {
		t.Errorf("max %s (want %s), count %d", h.Max(), all[len(all)-1], h.Count())
	}
	var a, b Histogram
	a.Record(time.Millisecond)
	b.Record(time.Second)
	a.Merge(&b)
	if a.Count() != 2 || a.Max() != time.Second || a.Percentile(1) != time.Second {
		t.Errorf("merge: count %d max %s p100 %s", a.Count(), a.Max(), a.Percentile(1))
	}
	for _, v := range []uint64{0, 1, 63, 64, 65, 1000, 1 << 20, 1<<40 + 12345} {
		if mid := bucketMid(bucketOf(v)); v > 64 && (float64(mid) < float64(v)*0.96 || float64(mid) > float64(v)*1.04) {
			t.Errorf("bucket of %d has midpoint %d", v, mid)
		}
	}
}
