package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runsOf builds a cell from the ops/s of its runs, as the sweep would.
func runsOf(workers, slots int, rates ...float64) Cell {
	c := Cell{Workers: workers, Slots: slots, Method: methodSlotted}
	if slots == 0 {
		c.Method = methodSingleRow
	}
	for i, r := range rates {
		c.add(&measured{sample: Sample{Round: i + 1, Ops: int64(r), Seconds: 1, OpsPerSec: r, Total: int64(r), Exact: true,
			StoppedBy: "duration"}})
	}
	return c
}

// cand is a candidate from the ops/s of its runs, one per round in order.
func cand(slots int, rates ...float64) Candidate {
	c := runsOf(1, slots, rates...)
	return candidateOf(c)
}

func TestSpread(t *testing.T) {
	m, lo, hi := spread([]float64{5, 1, 3})
	assert.Equal(t, []float64{3, 1, 5}, []float64{m, lo, hi})
	m, lo, hi = spread([]float64{4, 1, 3, 10})
	assert.Equal(t, []float64{3.5, 1, 10}, []float64{m, lo, hi}, "even count: the mean of the middle two")
	m, lo, hi = spread(nil)
	assert.Equal(t, []float64{0, 0, 0}, []float64{m, lo, hi})
}

func TestRecommendClearGain(t *testing.T) {
	base := cand(0, 1000, 1100, 950)
	r := recommend(dialectPostgres, 64, base, []Candidate{
		cand(1, 1050, 980, 1120),      // no better than the baseline
		cand(16, 5000, 5600, 5300),    // clearly better, but below the plateau
		cand(64, 9200, 9900, 9500),    // overlaps the best: within noise of it
		cand(256, 9800, 10300, 10000), // the best median
		cand(1024, 9600, 10100, 9900), // within noise too
	})
	assert.Equal(t, verdictUse, r.Verdict)
	assert.True(t, r.PaysOff)
	assert.Equal(t, 256, r.BestSlots)
	assert.Equal(t, []int{64, 256, 1024}, r.NearBest)
	assert.Equal(t, 64, r.Slots, "the fewest slots near the best")
	assert.Equal(t, 9500.0, r.OpsPerSec)
	assert.Equal(t, 9200.0, r.Low)
	assert.Equal(t, 9900.0, r.High)
	assert.InDelta(t, 9.2, r.SpeedUp, 1e-9, "the median of the per-round gains: 9200/1000, 9900/1100, 9500/950")
	assert.InDelta(t, 9.0, r.GainLow, 1e-9)
	assert.InDelta(t, 10.0, r.GainHigh, 1e-9)
	assert.False(t, r.AtLargest)
	assert.Contains(t, r.Summary, "use 64 slots: 9,500 ops/s (9,200–9,900) against the single-row UPDATE's 1,000 ops/s (950–1,100); "+
		"round by round ×9.20 (×9.00–×10.00 over 3 rounds), a gain beyond the noise")
	assert.Contains(t, r.Summary, "64, 256, 1024 slots are within 10% of the best (256 slots at 10,000 ops/s (9,800–10,300)) round by round")
}

// TestRecommendOverlapIsNoGain: when the spread of the per-round gains
// reaches down to no gain, however much higher the best's median, there is
// no recommendation.
func TestRecommendOverlapIsNoGain(t *testing.T) {
	base := cand(0, 900, 1500, 1000)
	r := recommend(dialectMySQL, 8, base, []Candidate{cand(4, 1100, 1300, 1250), cand(16, 1000, 1450, 1400)})
	assert.Equal(t, verdictWithinNoise, r.Verdict)
	assert.False(t, r.PaysOff)
	assert.Zero(t, r.Slots, "no slot count is recommended")
	assert.Equal(t, 16, r.BestSlots)
	assert.InDelta(t, 1000.0/900, r.SpeedUp, 1e-9)
	assert.InDelta(t, 1450.0/1500, r.GainLow, 1e-9, "round 2: the baseline won")
	assert.Contains(t, r.Summary, "At 8 concurrent writers: within noise, keep the single column. The best, 16 slots at 1,400 ops/s "+
		"(1,000–1,450), against the single-row UPDATE's 1,000 ops/s (900–1,500): round by round ×1.11 (×0.97–×1.40 over 3 rounds), "+
		"no gain beyond the noise")

	// A 2% gain with runs that happen to agree closely is still within the noise floor.
	r = recommend(dialectMySQL, 8, cand(0, 1000, 1001, 1002), []Candidate{cand(4, 1020, 1021, 1022)})
	assert.Equal(t, verdictWithinNoise, r.Verdict)
	// 10% with tight runs is beyond it.
	r = recommend(dialectMySQL, 8, cand(0, 1000, 1001, 1002), []Candidate{cand(4, 1100, 1101, 1102)})
	assert.Equal(t, verdictUse, r.Verdict)
	assert.Equal(t, 4, r.Slots)
}

// TestRecommendSlowRoundCancels: a round the machine slowed down for every
// cell makes the cells' spreads overlap, but the gain within each round is
// clear, and that is what counts.
func TestRecommendSlowRoundCancels(t *testing.T) {
	base := cand(0, 1000, 500, 1200)
	best := cand(4, 2000, 1100, 2400)
	require.Less(t, best.Low, base.High, "the cells' own spreads overlap")
	r := recommend(dialectPostgres, 8, base, []Candidate{best})
	assert.Equal(t, verdictUse, r.Verdict)
	assert.InDelta(t, 2.0, r.GainLow, 1e-9)
	assert.InDelta(t, 2.2, r.GainHigh, 1e-9)
}

// TestRecommendOneBadRound: with five rounds or more the worst fifth is left
// out of the gain's spread, so one disturbed round does not decide; with three
// it does.
func TestRecommendOneBadRound(t *testing.T) {
	base := cand(0, 1000, 1000, 1000, 1000, 1000)
	r := recommend(dialectMySQL, 64, base, []Candidate{cand(16, 900, 1500, 1600, 1700, 1800)})
	assert.Equal(t, verdictUse, r.Verdict)
	assert.InDelta(t, 1.5, r.GainLow, 1e-9)
	assert.InDelta(t, 1.7, r.GainHigh, 1e-9)
	assert.Contains(t, r.Summary, "×1.60 (×1.50–×1.70 over 5 rounds)")

	r = recommend(dialectMySQL, 64, cand(0, 1000, 1000, 1000), []Candidate{cand(16, 900, 1600, 1700)})
	assert.Equal(t, verdictWithinNoise, r.Verdict)

	r = recommend(dialectMySQL, 64, base, []Candidate{cand(16, 900, 950, 1600, 1700, 1800)})
	assert.Equal(t, verdictWithinNoise, r.Verdict, "two bad rounds of five are not an outlier")
}

// TestRecommendNearBestRoundByRound: nearness to the best is judged within
// rounds. A round the machine slowed down for everyone does not make a cell
// look far from the best, and a cell whose spread overlaps the best's only
// because of such a round is not near it when it is ×1.5 slower in the others.
func TestRecommendNearBestRoundByRound(t *testing.T) {
	base := cand(0, 1000, 600, 1000, 1000, 1000)
	r := recommend(dialectPostgres, 32, base, []Candidate{
		cand(16, 6500, 7000, 6600, 6550, 6700),     // inside the best's spread, but ×1.5 slower in four rounds of five
		cand(64, 9500, 4800, 9600, 9400, 9500),     // 5% below the best in every round, the slow one included
		cand(256, 10000, 5000, 10100, 9900, 10000), // the best; round 2 was slow for everyone
	})
	assert.Equal(t, verdictUse, r.Verdict)
	assert.Equal(t, []int{64, 256}, r.NearBest)
	assert.Equal(t, 64, r.Slots)
}

func TestRecommendPickClearsBaseline(t *testing.T) {
	// 1 slot is near the best but not clear of the baseline: the
	// recommendation is the fewest slots that are both.
	base := cand(0, 900, 1000, 1100)
	r := recommend(dialectPostgres, 8, base, []Candidate{cand(1, 920, 1550, 1500), cand(4, 1450, 1600, 1550), cand(8, 1500, 1700, 1600)})
	assert.Equal(t, verdictUse, r.Verdict)
	assert.Equal(t, []int{1, 4, 8}, r.NearBest)
	assert.Equal(t, 4, r.Slots)
	assert.True(t, r.AtLargest)
	assert.Contains(t, r.Summary, "larger -slots")
}

func TestRecommendSlower(t *testing.T) {
	r := recommend(dialectMySQL, 8, cand(0, 30000, 31000, 29500), []Candidate{cand(1, 20000, 21000, 20500), cand(4, 25000, 25500, 26000)})
	assert.Equal(t, verdictSlower, r.Verdict)
	assert.False(t, r.PaysOff)
	assert.Zero(t, r.Slots)
	assert.Equal(t, 4, r.BestSlots)
	assert.Less(t, r.SpeedUp, 1.0)
	assert.Contains(t, r.Summary, "keep the single column. The best, 4 slots at 25,500 ops/s (25,000–26,000), against the single-row "+
		"UPDATE's 30,000 ops/s (29,500–31,000): round by round ×0.83 (×0.82–×0.88 over 3 rounds), slower beyond the noise")
}

func TestRecommendSQLiteSaysNo(t *testing.T) {
	r := recommend(dialectSQLite, 8, cand(0, 1000, 1010, 990), []Candidate{cand(4, 3000, 3100, 2900)})
	assert.Equal(t, verdictSQLite, r.Verdict)
	assert.False(t, r.PaysOff, "even a measured gain: one writer at a time")
	assert.Zero(t, r.Slots)
	assert.Contains(t, r.Summary, "No: SQLite lets one writer in at a time")
	assert.Contains(t, r.Summary, "slots cannot help")
}

func TestRecommendOneRun(t *testing.T) {
	r := recommend(dialectPostgres, 8, cand(0, 1000), []Candidate{cand(4, 9000)})
	assert.Equal(t, verdictFewRuns, r.Verdict)
	assert.Zero(t, r.Slots)
	assert.Contains(t, r.Summary, "-repeat 3")
}

func TestRecommendTies(t *testing.T) {
	r := recommend(dialectPostgres, 8, cand(0, 100, 100, 100), []Candidate{cand(8, 500, 500, 500), cand(4, 500, 500, 500), cand(16, 500, 500, 500)})
	assert.Equal(t, 4, r.Slots, "equal throughput: the fewest slots")
	assert.Equal(t, 4, r.BestSlots)
	assert.False(t, r.AtLargest)
}

func TestRecommendEmptyAndBadData(t *testing.T) {
	r := recommend(dialectMySQL, 64, cand(0, 1000, 1000), nil)
	assert.Equal(t, verdictNoData, r.Verdict)
	assert.Zero(t, r.Slots)
	assert.Contains(t, r.Summary, "no recommendation")

	bad := []Candidate{cand(4, 0, 0), {Slots: 8, Median: math.NaN(), Runs: 2, Exact: true}, {Slots: 16, Median: math.Inf(1), Runs: 2, Exact: true}}
	r = recommend(dialectMySQL, 64, cand(0, 1000, 1000), bad)
	assert.Equal(t, verdictNoData, r.Verdict, "zero, NaN and Inf measurements are unusable")

	inexact := cand(4, 9000, 9100)
	inexact.Exact = false
	r = recommend(dialectMySQL, 64, cand(0, 1000, 1010), []Candidate{inexact, cand(8, 5000, 5100)})
	assert.Equal(t, 8, r.Slots, "an inexact cell is never recommended")
	assert.Equal(t, 1, r.Excluded)
	assert.Contains(t, r.Summary, "not exact")

	r = recommend(dialectMySQL, 64, Candidate{}, []Candidate{cand(4, 5000, 5100)})
	assert.Equal(t, verdictNoBaseline, r.Verdict)
	assert.Equal(t, 4, r.Slots)
	assert.False(t, r.PaysOff, "nothing to compare with")
	assert.Zero(t, r.SpeedUp)
	assert.Contains(t, r.Summary, "no successful updates")

	r = recommend(dialectMySQL, 64, Candidate{Median: math.NaN(), Runs: 3}, []Candidate{cand(4, 5000, 5100)})
	assert.Zero(t, r.BaselineOpsPerSec)
}

func TestRecommendFor(t *testing.T) {
	cells := []Cell{
		runsOf(8, 0, 100, 110, 90),
		runsOf(8, 4, 900, 950, 880),
		runsOf(64, 0, 200, 210, 190),
		runsOf(64, 4, 400, 420, 380),
		runsOf(64, 16, 1000, 1040, 980),
	}
	r := recommendFor(cells, 64, dialectPostgres)
	assert.Equal(t, 64, r.Workers)
	assert.Equal(t, 16, r.Slots)
	assert.Equal(t, 200.0, r.BaselineOpsPerSec)
	assert.Equal(t, 190.0, r.BaselineLow)
	assert.InDelta(t, 5, r.SpeedUp, 1e-9)
	r = recommendFor(cells, 8, dialectPostgres)
	assert.Equal(t, 4, r.Slots)
	assert.False(t, r.AtLargest, "one slot count is no evidence of a trend")
}

func TestCellAdd(t *testing.T) {
	c := runsOf(8, 4, 300, 100, 200)
	require.Len(t, c.Runs, 3)
	assert.Equal(t, []float64{200, 100, 300}, []float64{c.OpsPerSec, c.Low, c.High})
	assert.Equal(t, int64(600), c.Ops)
	assert.True(t, c.Exact)
	c.add(&measured{sample: Sample{Round: 4, Ops: 10, OpsPerSec: 10, Total: 9, StoppedBy: "max-ops"}})
	assert.False(t, c.Exact, "one inexact run makes the cell inexact")
	assert.Equal(t, "max-ops", c.StoppedBy)
	assert.Equal(t, 150.0, c.OpsPerSec)
}

func TestFmtRate(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.6: "1,000", 1234567: "1,234,567", math.NaN(): "0", -5: "0", 12: "12"} {
		assert.Equal(t, want, fmtRate(in))
	}
}
