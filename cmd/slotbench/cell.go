package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/slotted-go/slotted"
)

// Cell is one measurement: a worker count with either the single-row
// baseline (Slots 0) or the plugin at Slots slots.
type Cell struct {
	Workers   int     `json:"workers"`
	Slots     int     `json:"slots"`  // 0 for the single-row baseline
	Method    string  `json:"method"` // methodSingleRow or methodSlotted
	Ops       int64   `json:"ops"`    // successful operations
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"` // latency of successful operations, retries included
	P99Ms     float64 `json:"p99_ms"`
	Errors    Errors  `json:"errors"` // operations that failed, by kind
	// Retries and Conflicts are the plugin's (slotted.StatsOf): conflicts it
	// met and retried away. Always zero for the baseline, which does not retry.
	Retries   uint64            `json:"plugin_retries"`
	Conflicts map[string]uint64 `json:"plugin_conflicts,omitempty"`
	Total     int64             `json:"total"` // the counter (or row) read back after the cell
	Exact     bool              `json:"exact"` // Total == Ops
	StoppedBy string            `json:"stopped_by"`
	Evidence  Evidence          `json:"lock_evidence"`
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

// PostgresEvidence samples pg_stat_activity every sampleEvery during the cell.
type PostgresEvidence struct {
	Samples     int     `json:"samples"`
	WaitingMean float64 `json:"lock_waiting_mean"`
	WaitingMax  int64   `json:"lock_waiting_max"`
	// OwnOnly: only this run's sessions were counted (by application_name);
	// otherwise every session of the database.
	OwnOnly bool `json:"own_sessions_only"`
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
