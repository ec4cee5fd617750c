package main

import (
	"fmt"
	"math"
	"slices"
)

// tolerance is the 5% within which two throughputs count as the same: runs
// of a few seconds on a shared machine vary by about that much.
const tolerance = 0.05

// Candidate is one plugin measurement at the expected concurrency.
type Candidate struct {
	Slots     int
	OpsPerSec float64
	Exact     bool
}

// Recommendation is the outcome of the rule in recommend.
type Recommendation struct {
	Workers           int     `json:"workers"`
	Slots             int     `json:"slots"` // 0: no slot count measured usable
	OpsPerSec         float64 `json:"ops_per_sec"`
	BestSlots         int     `json:"best_slots"`
	BestOpsPerSec     float64 `json:"best_ops_per_sec"`
	BaselineOpsPerSec float64 `json:"baseline_ops_per_sec"` // 0: no baseline measured
	SpeedUp           float64 `json:"speedup"`              // OpsPerSec / BaselineOpsPerSec; 0 without a baseline
	PaysOff           bool    `json:"pays_off"`
	// AtLargest: the best was the largest slot count tried, so more might do better still.
	AtLargest bool   `json:"best_at_largest_slots"`
	Excluded  int    `json:"excluded_inexact"` // candidates left out because their total was not exact
	Summary   string `json:"summary"`
}

// recommend applies the rule: among exact measurements, find the best
// throughput and recommend the smallest slot count within tolerance of it
// (fewer slots mean cheaper reads for the same write speed). Slotted counters
// pay off only when that choice beats the single-row baseline by more than
// the same tolerance: a gain smaller than the noise is no gain.
func recommend(workers int, baseline float64, cands []Candidate) Recommendation {
	r := Recommendation{Workers: workers}
	if finite(baseline) && baseline > 0 {
		r.BaselineOpsPerSec = baseline
	}
	var usable []Candidate
	maxSlots := 0
	for _, c := range cands {
		if !c.Exact {
			r.Excluded++
			continue
		}
		if c.Slots > 0 && finite(c.OpsPerSec) && c.OpsPerSec > 0 {
			usable = append(usable, c)
			maxSlots = max(maxSlots, c.Slots)
		}
	}
	if len(usable) == 0 {
		r.Summary = fmt.Sprintf("At %d concurrent writers: no usable slotted measurement "+
			"(every plugin cell failed or was not exact), so no recommendation.", workers)
		if len(cands) == 0 {
			r.Summary = fmt.Sprintf("At %d concurrent writers: nothing measured with the plugin, so no recommendation.", workers)
		}
		return r
	}
	slices.SortFunc(usable, func(a, b Candidate) int { return a.Slots - b.Slots })
	for _, c := range usable {
		if c.OpsPerSec > r.BestOpsPerSec { // strict: on a tie the fewer slots stay best
			r.BestSlots, r.BestOpsPerSec = c.Slots, c.OpsPerSec
		}
	}
	// "Within 5%" includes exactly 5% below; the epsilon keeps 95 vs 100 inside
	// despite binary rounding of 0.95.
	floor := r.BestOpsPerSec*(1-tolerance) - 1e-9*r.BestOpsPerSec
	for _, c := range usable {
		if c.OpsPerSec >= floor {
			r.Slots, r.OpsPerSec = c.Slots, c.OpsPerSec
			break
		}
	}
	r.AtLargest = r.BestSlots == maxSlots && len(usable) > 1
	if r.BaselineOpsPerSec > 0 {
		r.SpeedUp = r.OpsPerSec / r.BaselineOpsPerSec
		r.PaysOff = r.OpsPerSec > r.BaselineOpsPerSec*(1+tolerance)
	}
	r.Summary = r.text()
	return r
}

// recommendFor applies recommend to a sweep's cells at the expected concurrency.
func recommendFor(cells []Cell, workers int) Recommendation {
	var baseline float64
	var cands []Candidate
	for _, c := range cells {
		if c.Workers != workers {
			continue
		}
		if c.Slots == 0 {
			baseline = c.OpsPerSec
			continue
		}
		cands = append(cands, Candidate{Slots: c.Slots, OpsPerSec: c.OpsPerSec, Exact: c.Exact})
	}
	return recommend(workers, baseline, cands)
}

func (r Recommendation) text() string {
	at := fmt.Sprintf("At %d concurrent writers", r.Workers)
	best := fmt.Sprintf("%s ops/s", fmtRate(r.OpsPerSec))
	if r.BestSlots != r.Slots {
		best += fmt.Sprintf(", within 5%% of the best %s ops/s at %s", fmtRate(r.BestOpsPerSec), plural(r.BestSlots, "slot"))
	}
	var s string
	switch {
	case r.BaselineOpsPerSec == 0:
		s = fmt.Sprintf("%s: use %s (%s). The single-row baseline produced no successful updates to compare with.",
			at, plural(r.Slots, "slot"), best)
	case r.PaysOff:
		s = fmt.Sprintf("%s: use %s (%s): ×%.2f the single-row UPDATE (%s ops/s).",
			at, plural(r.Slots, "slot"), best, r.SpeedUp, fmtRate(r.BaselineOpsPerSec))
		if r.AtLargest {
			s += " The best was at the largest slot count tried; larger -slots may do better still."
		}
	case r.OpsPerSec > r.BaselineOpsPerSec:
		s = fmt.Sprintf("%s, slotted counters don't pay off: the best choice, %s (%s), is only ×%.2f the single-row UPDATE "+
			"(%s ops/s), within the 5%% noise. Keep the single column.", at, plural(r.Slots, "slot"), best, r.SpeedUp, fmtRate(r.BaselineOpsPerSec))
	default:
		s = fmt.Sprintf("%s, slotted counters don't pay off: the best choice, %s (%s), is ×%.2f the single-row UPDATE "+
			"(%s ops/s). Keep the single column.", at, plural(r.Slots, "slot"), best, r.SpeedUp, fmtRate(r.BaselineOpsPerSec))
	}
	if r.Excluded > 0 {
		s += fmt.Sprintf(" (%d measurement(s) left out: their totals were not exact.)", r.Excluded)
	}
	return s
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
