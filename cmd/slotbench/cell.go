package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotted-go/slotted"
)

// Cell is one point of the sweep, a worker count with either the single-row
// baseline (Slots 0) or the plugin at Slots slots, measured -repeat times:
// OpsPerSec is the median of its runs and Low..High their spread.
type Cell struct {
	Workers   int      `json:"workers"`
	Slots     int      `json:"slots"`  // 0 for the single-row baseline
	Method    string   `json:"method"` // methodSingleRow or methodSlotted
	OpsPerSec float64  `json:"ops_per_sec"`
	Low       float64  `json:"ops_per_sec_min"`
	High      float64  `json:"ops_per_sec_max"`
	Runs      []Sample `json:"runs"`
	Ops       int64    `json:"ops"`     // successful operations, all runs
	Seconds   float64  `json:"seconds"` // all runs
	P50Ms     float64  `json:"p50_ms"`  // latency of successful operations over all runs, retries included
	P99Ms     float64  `json:"p99_ms"`
	Errors    Errors   `json:"errors"` // operations that failed, by kind
	// Retries and Conflicts are the plugin's (slotted.StatsOf): conflicts it
	// met and retried away. Always zero for the baseline, which does not retry.
	Retries   uint64            `json:"plugin_retries"`
	Conflicts map[string]uint64 `json:"plugin_conflicts,omitempty"`
	Exact     bool              `json:"exact"`      // every run's total read back equals its operations
	StoppedBy string            `json:"stopped_by"` // "max-ops" if any run hit -max-ops, else "duration"
	Evidence  Evidence          `json:"lock_evidence"`
	hist      histogram
}

// Sample is one timed run of a cell.
type Sample struct {
	Round     int     `json:"round"` // 1-based: the pass over all cells it was taken in
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Total     int64   `json:"total"` // the counter (or row) read back after the run
	Exact     bool    `json:"exact"` // Total == Ops
	StoppedBy string  `json:"stopped_by"`
}

// add folds one run, with its latencies, errors, retries and evidence, into c.
func (c *Cell) add(m *measured) {
	r := m.sample
	if len(c.Runs) == 0 {
		c.Exact, c.StoppedBy = true, "duration"
	}
	c.Runs = append(c.Runs, r)
	c.Ops += r.Ops
	c.Seconds += r.Seconds
	c.Exact = c.Exact && r.Exact
	if r.StoppedBy == "max-ops" {
		c.StoppedBy = r.StoppedBy
	}
	c.hist.merge(&m.hist)
	c.P50Ms, c.P99Ms = ms(c.hist.quantile(0.50)), ms(c.hist.quantile(0.99))
	c.Errors.merge(m.errs)
	c.Retries += m.retries
	for k, n := range m.conflicts {
		if c.Conflicts == nil {
			c.Conflicts = map[string]uint64{}
		}
		c.Conflicts[k] += n
	}
	c.Evidence.merge(m.evidence)
	rates := make([]float64, len(c.Runs))
	for i, r := range c.Runs {
		rates[i] = r.OpsPerSec
	}
	c.OpsPerSec, c.Low, c.High = spread(rates)
}

// spread returns the median, the minimum and the maximum of xs (0s when empty).
func spread(xs []float64) (median, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return median, s[0], s[n-1]
}

const (
	methodSingleRow = "single-row"
	methodSlotted   = "slotted"
)

// Errors counts failed operations by kind (slotted.ConflictOf).
type Errors struct {
	Deadlock      int64  `json:"deadlock"`
	LockTimeout   int64  `json:"lock_wait_timeout"`
	Busy          int64  `json:"busy"`
	Serialization int64  `json:"serialization"`
	Other         int64  `json:"other"`
	FirstOther    string `json:"first_other,omitempty"`
}

func (e *Errors) add(err error) {
	switch slotted.ConflictOf(err) {
	case slotted.Deadlock:
		e.Deadlock++
	case slotted.LockTimeout:
		e.LockTimeout++
	case slotted.Busy:
		e.Busy++
	case slotted.SerializationFailure:
		e.Serialization++
	default:
		e.Other++
		if e.FirstOther == "" {
			e.FirstOther = err.Error()
		}
	}
}

func (e *Errors) merge(o Errors) {
	e.Deadlock += o.Deadlock
	e.LockTimeout += o.LockTimeout
	e.Busy += o.Busy
	e.Serialization += o.Serialization
	e.Other += o.Other
	if e.FirstOther == "" {
		e.FirstOther = o.FirstOther
	}
}

func (e Errors) Total() int64 { return e.Deadlock + e.LockTimeout + e.Busy + e.Serialization + e.Other }

func (e Errors) String() string {
	var parts []string
	for _, p := range []struct {
		n    int64
		name string
	}{{e.Deadlock, "deadlock"}, {e.LockTimeout, "lock timeout"}, {e.Busy, "busy"}, {e.Serialization, "serialization"}, {e.Other, "other"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.name, p.n))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

// Evidence is the database's own account of lock waiting during a cell; one
// field is set, by dialect.
type Evidence struct {
	InnoDB   *InnoDBEvidence   `json:"innodb,omitempty"`
	Postgres *PostgresEvidence `json:"postgres,omitempty"`
	SQLite   *SQLiteEvidence   `json:"sqlite,omitempty"`
}

// InnoDBEvidence holds deltas of SHOW GLOBAL STATUS across the cell. They are
// server-wide: other clients' lock waits are included.
type InnoDBEvidence struct {
	RowLockWaits  int64  `json:"row_lock_waits"`
	RowLockTimeMs int64  `json:"row_lock_time_ms"`
	Deadlocks     *int64 `json:"deadlocks,omitempty"` // Innodb_deadlocks: MariaDB only
}

// PostgresEvidence samples, every sampleEvery during the cell, the backends
// waiting on a lock inside a statement on the sweep's scratch tables
// (diagnose.LockWaits): this run's sessions only.
type PostgresEvidence struct {
	Samples     int     `json:"samples"`
	WaitingMean float64 `json:"lock_waiting_mean"`
	WaitingMax  int64   `json:"lock_waiting_max"`
	// Deadlocks is the pg_stat_database.deadlocks delta; backends report it
	// lazily, so it can lag by about a second.
	Deadlocks int64 `json:"deadlocks"`
}

// SQLiteEvidence: SQLite has no lock statistics; SQLITE_BUSY is its lock wait
// failing. Busy counts busy errors returned plus busy conflicts the plugin
// retried away.
type SQLiteEvidence struct {
	Busy int64 `json:"busy_seen"`
}

// merge adds o (a later run's evidence) to e.
func (e *Evidence) merge(o Evidence) {
	switch {
	case o.InnoDB != nil:
		if e.InnoDB == nil {
			e.InnoDB = &InnoDBEvidence{}
		}
		e.InnoDB.RowLockWaits += o.InnoDB.RowLockWaits
		e.InnoDB.RowLockTimeMs += o.InnoDB.RowLockTimeMs
		if o.InnoDB.Deadlocks != nil {
			d := *o.InnoDB.Deadlocks
			if e.InnoDB.Deadlocks != nil {
				d += *e.InnoDB.Deadlocks
			}
			e.InnoDB.Deadlocks = &d
		}
	case o.Postgres != nil:
		if e.Postgres == nil {
			e.Postgres = &PostgresEvidence{}
		}
		p, q := e.Postgres, o.Postgres
		if n := p.Samples + q.Samples; n > 0 {
			p.WaitingMean = (p.WaitingMean*float64(p.Samples) + q.WaitingMean*float64(q.Samples)) / float64(n)
		}
		p.Samples += q.Samples
		p.WaitingMax = max(p.WaitingMax, q.WaitingMax)
		p.Deadlocks += q.Deadlocks
	case o.SQLite != nil:
		if e.SQLite == nil {
			e.SQLite = &SQLiteEvidence{}
		}
		e.SQLite.Busy += o.SQLite.Busy
	}
}

func (e Evidence) String() string {
	switch {
	case e.InnoDB != nil:
		s := fmt.Sprintf("%d waits, %d ms", e.InnoDB.RowLockWaits, e.InnoDB.RowLockTimeMs)
		if e.InnoDB.Deadlocks != nil {
			s += fmt.Sprintf(", %d deadlocks", *e.InnoDB.Deadlocks)
		}
		return s
	case e.Postgres != nil:
		return fmt.Sprintf("waiting avg %.1f max %d, %d deadlocks", e.Postgres.WaitingMean, e.Postgres.WaitingMax, e.Postgres.Deadlocks)
	case e.SQLite != nil:
		return fmt.Sprintf("busy %d", e.SQLite.Busy)
	}
	return "-"
}

// fmtLatency prints a latency in ms with about three significant digits.
func fmtLatency(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.2fs", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.2fms", ms)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
