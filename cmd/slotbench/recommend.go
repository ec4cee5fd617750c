package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// minGain is the least gain, per round, that counts: a percent or two is no
// reason to change a schema, and no measurement here is that precise.
const minGain = 0.05

// nearBest is how much faster than a slot count the best may be, beyond the
// noise, for that slot count still to be recommended instead of it: fewer
// slots make reads cheaper, and 10% of write throughput is worth that.
const nearBest = 0.10

// Verdicts of the rule in recommend.
const (
	verdictUse         = "use"          // slots beat the single-row UPDATE beyond the noise
	verdictWithinNoise = "within-noise" // no difference beyond the spread of the per-round gains
	verdictSlower      = "slower"       // the single-row UPDATE won beyond the noise
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

func (c Candidate) usable() bool { return c.Exact && finite(c.Median) && c.Median > 0 && c.Runs > 0 }

// Recommendation is the outcome of the rule in recommend.
type Recommendation struct {
	Workers   int    `json:"workers"`   // per instance
	Instances int    `json:"instances"` // app instances (processes) the recommendation assumed; 0 or 1: one
	Verdict   string `json:"verdict"`
	// Slots is the slot count recommended; 0 when there is none (keep the
	// single column, or nothing usable was measured).
	Slots         int     `json:"slots"`
	OpsPerSec     float64 `json:"ops_per_sec"` // Slots's median and spread
	Low           float64 `json:"ops_per_sec_min"`
	High          float64 `json:"ops_per_sec_max"`
	BestSlots     int     `json:"best_slots"` // the highest median
	BestOpsPerSec float64 `json:"best_ops_per_sec"`
	// NearBest are the slot counts the best does not beat by more than
	// nearBest beyond the noise (see gain).
	NearBest          []int   `json:"near_best"`
	BaselineOpsPerSec float64 `json:"baseline_ops_per_sec"` // 0: no baseline measured
	BaselineLow       float64 `json:"baseline_ops_per_sec_min"`
	BaselineHigh      float64 `json:"baseline_ops_per_sec_max"`
	// SpeedUp is the median of the per-round gains over the baseline (of
	// Slots, or of the best when nothing is recommended); GainLow..GainHigh
	// their spread, the worst fifth of rounds left out.
	SpeedUp   float64 `json:"speedup"`
	GainLow   float64 `json:"speedup_low"`
	GainHigh  float64 `json:"speedup_high"`
	Rounds    int     `json:"rounds_compared"`
	PaysOff   bool    `json:"pays_off"`
	AtLargest bool    `json:"best_at_largest_slots"` // the best was the largest slot count tried: more might do better still
	Excluded  int     `json:"excluded_inexact"`      // candidates left out because a total was not exact
	Summary   string  `json:"summary"`
}

// gain compares a with b round by round: every round ran each cell once,
// close together in time, so a round the machine slowed down slows both and
// their ratio cancels it. It returns the median ratio and the spread of the
// ratios with the worst fifth of rounds (one in five) left out at each end,
// so that one disturbed round cannot decide a verdict; with fewer than five
// rounds the spread is the full min..max. n is the number of rounds compared.
func gain(a, b Candidate) (median, lo, hi float64, n int) {
	var ratios []float64
	for round, x := range a.ByRound {
		if y, ok := b.ByRound[round]; ok && y > 0 {
			ratios = append(ratios, x/y)
		}
	}
	if len(ratios) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(ratios)
	n = len(ratios)
	median, _, _ = spread(ratios)
	return median, ratios[n/5], ratios[n-1-n/5], n
}

// recommend applies the rule. Among exact measurements the best is the
// highest median. Slotted counters pay off only when the best beat the
// baseline by more than minGain in every round but the worst fifth (its gain's
// spread lies above 1+minGain): a gain inside the spread is no gain, and the
// verdict is then "within noise, keep the single column", or "slower" when
// the baseline won likewise. When they pay off, the recommendation is the
// fewest slots (cheaper reads) that the best does not beat by more than
// nearBest by the same test, and that clear the baseline by it too.
// SQLite always gets a no: it lets one writer in at a time, so slots cannot
// add concurrency.
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
		if _, lo, _, n := gain(best, c); n == 0 || lo <= 1+nearBest+1e-9 {
			r.NearBest = append(r.NearBest, c.Slots)
		}
	}
	if hasBaseline {
		r.SpeedUp, r.GainLow, r.GainHigh, r.Rounds = gain(best, baseline)
	}
	switch {
	case dialect == dialectSQLite:
		r.Verdict = verdictSQLite
	case !hasBaseline:
		r.Verdict = verdictNoBaseline
		r.pick(usable, Candidate{})
	case r.Rounds < 2:
		r.Verdict = verdictFewRuns
	case r.GainLow > 1+minGain:
		r.Verdict, r.PaysOff = verdictUse, true
		r.pick(usable, baseline)
	case r.GainHigh < 1-minGain:
		r.Verdict = verdictSlower
	default:
		r.Verdict = verdictWithinNoise
	}
	r.Summary = r.text(best)
	return r
}

// pick recommends the fewest slots near the best that clear the baseline
// beyond the noise (the best itself does whenever pick is called); without a
// baseline, the fewest near the best.
func (r *Recommendation) pick(usable []Candidate, baseline Candidate) {
	for _, c := range usable { // ascending slots
		if !slices.Contains(r.NearBest, c.Slots) {
			continue
		}
		if baseline.Runs > 0 {
			m, lo, hi, n := gain(c, baseline)
			if lo <= 1+minGain {
				continue
			}
			r.SpeedUp, r.GainLow, r.GainHigh, r.Rounds = m, lo, hi, n
		}
		r.Slots, r.OpsPerSec, r.Low, r.High = c.Slots, c.Median, c.Low, c.High
		return
	}
}

// shape names the deployment measured: "8 concurrent writers", or "4 app
// instances × 8 writers each (32 in all)".
func (r Recommendation) shape() string {
	if r.Instances > 1 {
		return fmt.Sprintf("%d app instances × %s each (%d in all, each instance a process with its own pool and coalescer)",
			r.Instances, plural(r.Workers, "writer"), r.Instances*r.Workers)
	}
	return fmt.Sprintf("%d concurrent writers", r.Workers)
}

// recommendForInstances is recommendFor for cells measured as instances app
// instances of workers writers each: its summary names that shape, and its
// pick must also have a median within nearBest of the best's. Each run of such
// a cell adds up processes started apart on a loaded machine, so runs spread
// wider and the round-by-round test alone admits slot counts well below the
// best, while across instances the slot curve is steep (PostgreSQL, 8
// instances x 5 writers: 1 slot at 35% of 256's throughput, 16 at 72%).
func recommendForInstances(cells []Cell, instances, workers int, dialect string) Recommendation {
	r := recommendFor(cells, workers, dialect)
	if instances <= 1 {
		return r
	}
	r.Instances = instances
	var best, baseline Candidate
	var mine []Cell
	for _, c := range cells {
		switch {
		case c.Workers != workers:
		case c.Slots == 0:
			baseline = candidateOf(c)
		default:
			mine = append(mine, c)
			if c.Slots == r.BestSlots {
				best = candidateOf(c)
			}
		}
	}
	if r.PaysOff && r.OpsPerSec < (1-nearBest)*r.BestOpsPerSec {
		slices.SortFunc(mine, func(a, b Cell) int { return a.Slots - b.Slots })
		for _, c := range mine {
			if slices.Contains(r.NearBest, c.Slots) && c.OpsPerSec >= (1-nearBest)*r.BestOpsPerSec {
				r.Slots, r.OpsPerSec, r.Low, r.High = c.Slots, c.OpsPerSec, c.Low, c.High
				r.SpeedUp, r.GainLow, r.GainHigh, r.Rounds = gain(candidateOf(c), baseline)
				break
			}
		}
	}
	r.Summary = r.text(best)
	return r
}

// recommendFor applies recommend to a sweep's cells at the expected concurrency.
func recommendFor(cells []Cell, workers int, dialect string) Recommendation {
	var baseline Candidate
	var cands []Candidate
	for _, c := range cells {
		if c.Workers != workers {
			continue
		}
		if c.Slots == 0 {
			baseline = candidateOf(c)
			continue
		}
		cands = append(cands, candidateOf(c))
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

// gainText prints the per-round gain: "×4.91 (×3.70–×6.18 over 5 rounds)".
func (r Recommendation) gainText() string {
	return fmt.Sprintf("×%.2f (×%.2f–×%.2f over %s)", r.SpeedUp, r.GainLow, r.GainHigh, plural(r.Rounds, "round"))
}

func (r Recommendation) text(best Candidate) string {
	at := "At " + r.shape()
	bestText := fmt.Sprintf("%s at %s", plural(best.Slots, "slot"), rangeText(best.Median, best.Low, best.High))
	base := "the single-row UPDATE's " + rangeText(r.BaselineOpsPerSec, r.BaselineLow, r.BaselineHigh)
	var s string
	switch r.Verdict {
	case verdictNoData:
		s = fmt.Sprintf("%s: no usable slotted measurement (every plugin cell failed or was not exact), so no recommendation.", at)
	case verdictSQLite:
		s = fmt.Sprintf("No: SQLite lets one writer in at a time, whatever the row, so slots cannot help. Keep the single column. "+
			"(Measured at %s: the best, %s, against %s.)", r.shape(), bestText, base)
	case verdictFewRuns:
		s = fmt.Sprintf("%s: one run per cell gives no spread to judge a difference by, so no recommendation "+
			"(the best, %s; %s). Use -repeat 3 or more.", at, bestText, base)
	case verdictNoBaseline:
		s = fmt.Sprintf("%s: use %s (%s). The single-row baseline produced no successful updates to compare with.",
			at, plural(r.Slots, "slot"), rangeText(r.OpsPerSec, r.Low, r.High))
	case verdictUse:
		s = fmt.Sprintf("%s: use %s: %s against %s; round by round %s, a gain beyond the noise.",
			at, plural(r.Slots, "slot"), rangeText(r.OpsPerSec, r.Low, r.High), base, r.gainText())
		if len(r.NearBest) > 1 {
			s += fmt.Sprintf(" %s slots are within %.0f%% of the best (%s) round by round, noise allowed; fewer slots make reads cheaper.",
				joinInts(r.NearBest), nearBest*100, bestText)
		}
		if r.AtLargest {
			s += " The best was at the largest slot count tried; larger -slots may do better still."
		}
	case verdictSlower:
		s = fmt.Sprintf("%s: keep the single column. The best, %s, against %s: round by round %s, slower beyond the noise.",
			at, bestText, base, r.gainText())
	default:
		s = fmt.Sprintf("%s: within noise, keep the single column. The best, %s, against %s: round by round %s, "+
			"no gain beyond the noise (longer -duration runs, or a quieter machine, narrow the spread).", at, bestText, base, r.gainText())
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
