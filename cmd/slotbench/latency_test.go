package main

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	assert.Equal(t, time.Duration(0), h.quantile(0.5), "empty")
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.99, 1} {
		want := q * 1000 * float64(time.Microsecond)
		got := float64(h.quantile(q))
		assert.InDelta(t, 1, got/want, 0.035, "q=%v: %v", q, time.Duration(got))
	}
	var other histogram
	other.record(time.Hour)
	h.merge(&other)
	assert.Equal(t, uint64(1001), h.n)
	assert.InDelta(t, 1, float64(h.quantile(1))/float64(time.Hour), 0.035)
}

func TestHistogramBuckets(t *testing.T) {
	for _, v := range []uint64{0, 1, 31, 32, 33, 1000, 123456789, math.MaxInt64} {
		i := bucketOf(v)
		assert.Less(t, i, histBuckets)
		assert.InDelta(t, float64(v), bucketMid(i), math.Max(0.5, 0.035*float64(v)), "value %d", v)
	}
	var h histogram
	h.record(-time.Second) // clock oddities are clamped, not a panic
	assert.Equal(t, time.Duration(0), h.quantile(0.5))
}
