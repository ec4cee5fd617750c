package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// nearBest is how close to the best a slot count must come, round by round,
// to be recommended instead of it: fewer slots make reads cheaper, and 10%
// of write throughput is worth that.
const nearBest = 0.10

// noiseFloor widens every cell's spread to at least ±2.5% of its median: the
// min..max of three short runs on a shared machine can happen to sit closer
// together than the runs really scatter, and a gain of a percent or two is no
// reason to change a schema.
const noiseFloor = 0.025

// Verdicts of the rule in recommend.
const (
	verdictUse         = "use"          // slots beat the single-row UPDATE beyond the noise
	verdictWithinNoise = "within-noise" // no difference beyond the spread of the runs
	verdictSlower      = "slower"       // the single-row UPDATE won every run
	verdictSQLite      = "sqlite"       // one writer at a time: slots cannot help
	verdictNoBaseline  = "no-baseline"  // the baseline produced nothing to compare with
	verdictFewRuns     = "too-few-runs" // one run per cell: no spread to judge by
	verdictNoData      = "no-data"      // no usable plugin measurement
)

// Candidate is one measured cell at the expected concurrency: the median of
// its runs, their spread, its ops/s by round, and whether every run's total
// was exact.
type Candidate struct {
	Slots   int
	Median  float64
	Low     float64
	High    float64
	Runs    int
	ByRound map[int]float64
	Exact   bool
}

// band is the candidate's spread, widened to noiseFloor.
func (c Candidate) band() (lo, hi float64) {
	return min(c.Low, c.Median*(1-noiseFloor)), max(c.High, c.Median*(1+noiseFloor))
}

func (c Candidate) usable() bool { return c.Exact && finite(c.Median) && c.Median > 0 && c.Runs > 0 }

// Recommendation is the outcome of the rule in recommend.
type Recommendation struct {
	Workers int    `json:"workers"`
	Verdict string `json:"verdict"`
	// Slots is the slot count recommended; 0 when there is none (keep the
	// single column, or nothing usable was measured).
	Slots         int     `json:"slots"`
	OpsPerSec     float64 `json:"ops_per_sec"` // Slots's median and spread
	Low           float64 `json:"ops_per_sec_min"`
	High          float64 `json:"ops_per_sec_max"`
	BestSlots     int     `json:"best_slots"` // the highest median
	BestOpsPerSec float64 `json:"best_ops_per_sec"`
	// NearBest are the slot counts within nearBest of the best, round by round.
	NearBest          []int   `json:"near_best"`
	BaselineOpsPerSec float64 `json:"baseline_ops_per_sec"` // 0: no baseline measured
	BaselineLow       float64 `json:"baseline_ops_per_sec_min"`
	BaselineHigh      float64 `json:"baseline_ops_per_sec_max"`
	SpeedUp           float64 `json:"speedup"` // median over the baseline's median; 0 without a baseline
	PaysOff           bool    `json:"pays_off"`
	// AtLargest: the best was the largest slot count tried, so more might do better still.
	AtLargest bool   `json:"best_at_largest_slots"`
	Excluded  int    `json:"excluded_inexact"` // candidates left out because a total was not exact
	Summary   string `json:"summary"`
}

// recommend applies the rule. Among exact measurements the best is the
// highest median. Slotted counters pay off only when the best's whole spread
// (min..max of its runs, widened to noiseFloor) lies above the baseline's: a
// gain inside the spread is no gain, and the verdict is then "within noise,
// keep the single column" (or "slower" when the baseline's spread lies above).
// When they pay off, the recommendation is the fewest slots (cheaper reads)
// that come within nearBest of the best round by round (the median of the
// per-round ratios: a round slowed by the machine slows every cell in it, so
// comparing within rounds cancels it) and whose spread also clears the
// baseline's. SQLite always gets a no: it lets one writer in at a time, so
// slots cannot add concurrency.
func recommend(dialect string, workers int, baseline Candidate, cands []Candidate) Recommendation {
	r := Recommendation{Workers: workers}
	hasBaseline := finite(baseline.Median) && baseline.Median > 0 && baseline.Runs > 0
	if hasBaseline {
		r.BaselineOpsPerSec, r.BaselineLow, r.BaselineHigh = baseline.Median, baseline.Low, baseline.High
	}
	var usable []Candidate
	for _, c := range cands {
		if !c.Exact {
			r.Excluded++
			continue
		}
		if c.Slots > 0 && c.usable() {
			usable = append(usable, c)
		}
	}
	if len(usable) == 0 {
		r.Verdict = verdictNoData
		r.Summary = r.text(Candidate{})
		return r
	}
	slices.SortFunc(usable, func(a, b Candidate) int { return a.Slots - b.Slots })
	best := usable[0]
	for _, c := range usable[1:] {
		if c.Median > best.Median { // strict: on a tie the fewer slots stay best
			best = c
		}
	}
	r.BestSlots, r.BestOpsPerSec = best.Slots, best.Median
	r.AtLargest = best.Slots == usable[len(usable)-1].Slots && len(usable) > 1
	for _, c := range usable {
		if ratioByRound(best, c) <= 1+nearBest+1e-9 {
			r.NearBest = append(r.NearBest, c.Slots)
		}
	}
	if hasBaseline {
		r.SpeedUp = best.Median / baseline.Median
	}
	bestLo, bestHi := best.band()
	baseLo, baseHi := baseline.band()
	switch {
	case dialect == dialectSQLite:
		r.Verdict = verdictSQLite
	case best.Runs < 2 || hasBaseline && baseline.Runs < 2:
		r.Verdict = verdictFewRuns
	case !hasBaseline:
		r.Verdict = verdictNoBaseline
		r.pick(usable, 0)
	case bestLo > baseHi:
		r.Verdict, r.PaysOff = verdictUse, true
		r.pick(usable, baseHi)
		r.SpeedUp = r.OpsPerSec / baseline.Median
	case bestHi < baseLo:
		r.Verdict = verdictSlower
	default:
		r.Verdict = verdictWithinNoise
	}
	r.Summary = r.text(best)
	return r
}

// ratioByRound is the median over the rounds both were measured in of
// a's ops/s over b's; the ratio of their medians when they share no round.
func ratioByRound(a, b Candidate) float64 {
	var ratios []float64
	for round, x := range a.ByRound {
		if y, ok := b.ByRound[round]; ok && y > 0 {
			ratios = append(ratios, x/y)
		}
	}
	if len(ratios) == 0 {
		return a.Median / b.Median
	}
	m, _, _ := spread(ratios)
	return m
}

// pick recommends the fewest slots near the best whose spread lies above
// floor (the best itself qualifies whenever pick is called).
func (r *Recommendation) pick(usable []Candidate, floor float64) {
	for _, c := range usable { // ascending slots
		if lo, _ := c.band(); slices.Contains(r.NearBest, c.Slots) && lo > floor {
			r.Slots, r.OpsPerSec, r.Low, r.High = c.Slots, c.Median, c.Low, c.High
			return
		}
	}
}

// recommendFor applies recommend to a sweep's cells at the expected concurrency.
func recommendFor(cells []Cell, workers int, dialect string) Recommendation {
	var baseline Candidate
	var cands []Candidate
	for _, c := range cells {
		if c.Workers != workers {
			continue
		}
		cand := candidateOf(c)
		if c.Slots == 0 {
			baseline = cand
			continue
		}
		cands = append(cands, cand)
	}
	return recommend(dialect, workers, baseline, cands)
}

func candidateOf(c Cell) Candidate {
	cand := Candidate{Slots: c.Slots, Median: c.OpsPerSec, Low: c.Low, High: c.High, Runs: len(c.Runs), Exact: c.Exact,
		ByRound: make(map[int]float64, len(c.Runs))}
	for _, run := range c.Runs {
		cand.ByRound[run.Round] = run.OpsPerSec
	}
	return cand
}

// rangeText prints a median with its spread: "9,812 ops/s (9,500–10,100)".
func rangeText(median, lo, hi float64) string {
	if lo == hi {
		return fmtRate(median) + " ops/s"
	}
	return fmt.Sprintf("%s ops/s (%s–%s)", fmtRate(median), fmtRate(lo), fmtRate(hi))
}

func (r Recommendation) text(best Candidate) string {
	at := fmt.Sprintf("At %d concurrent writers", r.Workers)
	bestText := fmt.Sprintf("%s at %s", plural(best.Slots, "slot"), rangeText(best.Median, best.Low, best.High))
	base := "the single-row UPDATE's " + rangeText(r.BaselineOpsPerSec, r.BaselineLow, r.BaselineHigh)
	var s string
	switch r.Verdict {
	case verdictNoData:
		s = fmt.Sprintf("%s: no usable slotted measurement (every plugin cell failed or was not exact), so no recommendation.", at)
	case verdictSQLite:
		s = fmt.Sprintf("No: SQLite lets one writer in at a time, whatever the row, so slots cannot help. Keep the single column. "+
			"(Measured at %d writers: the best, %s, ×%.2f %s.)", r.Workers, bestText, r.SpeedUp, base)
	case verdictFewRuns:
		s = fmt.Sprintf("%s: one run per cell gives no spread to judge a difference by, so no recommendation "+
			"(the best, %s; %s). Use -repeat 3 or more.", at, bestText, base)
	case verdictNoBaseline:
		s = fmt.Sprintf("%s: use %s (%s). The single-row baseline produced no successful updates to compare with.",
			at, plural(r.Slots, "slot"), rangeText(r.OpsPerSec, r.Low, r.High))
	case verdictUse:
		s = fmt.Sprintf("%s: use %s: %s, ×%.2f %s, a gain beyond the spread of the runs.",
			at, plural(r.Slots, "slot"), rangeText(r.OpsPerSec, r.Low, r.High), r.SpeedUp, base)
		if len(r.NearBest) > 1 {
			s += fmt.Sprintf(" %s slots come within %.0f%% of the best (%s) round by round; fewer slots make reads cheaper.",
				joinInts(r.NearBest), nearBest*100, bestText)
		}
		if r.AtLargest {
			s += " The best was at the largest slot count tried; larger -slots may do better still."
		}
	case verdictSlower:
		s = fmt.Sprintf("%s: keep the single column. The best, %s, is slower than %s, beyond the spread of the runs.",
			at, bestText, base)
	default:
		s = fmt.Sprintf("%s: within noise, keep the single column. The best, %s, is ×%.2f %s, but their runs overlap: "+
			"no gain beyond the noise (longer -duration runs, or a quieter machine, narrow the spread).", at, bestText, r.SpeedUp, base)
	}
	if r.Excluded > 0 {
		s += fmt.Sprintf(" (%d measurement(s) left out: their totals were not exact.)", r.Excluded)
	}
	return s
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// fmtRate prints an ops/s figure with thousands separators.
func fmtRate(f float64) string {
	if !finite(f) || f < 0 {
		return "0"
	}
	s := fmt.Sprintf("%.0f", f)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
