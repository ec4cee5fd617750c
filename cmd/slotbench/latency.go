package main

import (
	"math"
	"math/bits"
	"time"
)

// histogram records latencies in log-linear buckets: exact below 32 ns, then
// 32 buckets per power of two, so any quantile is within about 3% of the true
// value. Fixed size (15 KiB) whatever the number of operations, unlike
// keeping every sample, and one per worker needs no locking.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
}

const (
	histSubBits = 5 // 32 sub-buckets per power of two
	histSub     = 1 << histSubBits
	histBuckets = histSub + (64-histSubBits)*histSub
)

func bucketOf(ns uint64) int {
	if ns < histSub {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // >= histSubBits
	sub := (ns >> (e - histSubBits)) & (histSub - 1)
	return histSub + (e-histSubBits)*histSub + int(sub)
}

// bucketMid is the middle of bucket i's range, in ns.
func bucketMid(i int) float64 {
	if i < histSub {
		return float64(i)
	}
	e := (i-histSub)/histSub + histSubBits
	sub := (i - histSub) % histSub
	lo := float64(uint64(histSub+sub) << (e - histSubBits))
	width := float64(uint64(1) << (e - histSubBits))
	return lo + width/2
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the q-quantile (0 < q <= 1); 0 when nothing was recorded.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(bucketMid(i))
		}
	}
	return time.Duration(bucketMid(histBuckets - 1))
}
