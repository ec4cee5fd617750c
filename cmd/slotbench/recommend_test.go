package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func cands(pairs ...float64) []Candidate {
	var out []Candidate
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Candidate{Slots: int(pairs[i]), OpsPerSec: pairs[i+1], Exact: true})
	}
	return out
}

func TestRecommendSmallestWithinTolerance(t *testing.T) {
	r := recommend(64, 1000, cands(256, 10000, 1, 1500, 16, 9600, 64, 9900, 4, 6000))
	assert.Equal(t, 256, r.BestSlots)
	assert.Equal(t, 10000.0, r.BestOpsPerSec)
	assert.Equal(t, 16, r.Slots, "9600 is within 5% of 10000; order of input doesn't matter")
	assert.Equal(t, 9600.0, r.OpsPerSec)
	assert.InDelta(t, 9.6, r.SpeedUp, 1e-9)
	assert.True(t, r.PaysOff)
	assert.True(t, r.AtLargest, "the best was the largest slot count tried")
	assert.Contains(t, r.Summary, "use 16 slots")
	assert.Contains(t, r.Summary, "×9.60")
	assert.Contains(t, r.Summary, "larger -slots")
}

func TestRecommendBoundary(t *testing.T) {
	r := recommend(8, 10, cands(1, 95, 2, 100))
	assert.Equal(t, 1, r.Slots, "exactly 5% below the best is within 5%")
	r = recommend(8, 10, cands(1, 94.99, 2, 100))
	assert.Equal(t, 2, r.Slots, "just over 5% below is not")
}

func TestRecommendTies(t *testing.T) {
	r := recommend(8, 100, cands(8, 500, 4, 500, 16, 500))
	assert.Equal(t, 4, r.Slots, "equal throughput: the fewest slots")
	assert.Equal(t, 4, r.BestSlots)
	assert.False(t, r.AtLargest)
}

func TestRecommendBaselineWins(t *testing.T) {
	r := recommend(8, 30000, cands(1, 20000, 4, 25000, 16, 25400))
	assert.False(t, r.PaysOff)
	assert.Equal(t, 4, r.Slots)
	assert.Less(t, r.SpeedUp, 1.0)
	assert.Contains(t, r.Summary, "don't pay off")
	assert.Contains(t, r.Summary, "Keep the single column")

	r = recommend(8, 1000, cands(4, 1000))
	assert.False(t, r.PaysOff, "equal to the baseline is no gain")

	r = recommend(8, 1000, cands(4, 1040))
	assert.False(t, r.PaysOff, "4% faster is within the noise")
	assert.Contains(t, r.Summary, "within the 5% noise")

	r = recommend(8, 1000, cands(4, 1060))
	assert.True(t, r.PaysOff)
}

func TestRecommendEmptyAndBadData(t *testing.T) {
	r := recommend(64, 1000, nil)
	assert.Equal(t, 0, r.Slots)
	assert.False(t, r.PaysOff)
	assert.Contains(t, r.Summary, "no recommendation")

	r = recommend(64, 1000, cands(4, 0, 8, math.NaN(), 16, math.Inf(1)))
	assert.Equal(t, 0, r.Slots, "zero, NaN and Inf measurements are unusable")

	r = recommend(64, 1000, []Candidate{{Slots: 4, OpsPerSec: 9000, Exact: false}, {Slots: 8, OpsPerSec: 5000, Exact: true}})
	assert.Equal(t, 8, r.Slots, "an inexact cell is never recommended")
	assert.Equal(t, 1, r.Excluded)
	assert.Contains(t, r.Summary, "not exact")

	r = recommend(64, 0, cands(4, 5000))
	assert.Equal(t, 4, r.Slots)
	assert.False(t, r.PaysOff, "nothing to compare with")
	assert.Equal(t, 0.0, r.SpeedUp)
	assert.Contains(t, r.Summary, "no successful updates")

	r = recommend(64, math.NaN(), cands(4, 5000))
	assert.Equal(t, 0.0, r.BaselineOpsPerSec)
}

func TestRecommendFor(t *testing.T) {
	cells := []Cell{
		{Workers: 8, Slots: 0, OpsPerSec: 100},
		{Workers: 8, Slots: 4, OpsPerSec: 900, Exact: true},
		{Workers: 64, Slots: 0, OpsPerSec: 200},
		{Workers: 64, Slots: 4, OpsPerSec: 400, Exact: true},
		{Workers: 64, Slots: 16, OpsPerSec: 1000, Exact: true},
	}
	r := recommendFor(cells, 64)
	assert.Equal(t, 64, r.Workers)
	assert.Equal(t, 16, r.Slots)
	assert.Equal(t, 200.0, r.BaselineOpsPerSec)
	assert.InDelta(t, 5, r.SpeedUp, 1e-9)
	r = recommendFor(cells, 8)
	assert.Equal(t, 4, r.Slots)
	assert.False(t, r.AtLargest, "one slot count is no evidence of a trend")
}

func TestFmtRate(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.6: "1,000", 1234567: "1,234,567", math.NaN(): "0", -5: "0", 12: "12"} {
		assert.Equal(t, want, fmtRate(in))
	}
}
