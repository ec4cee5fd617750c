// Package write is the one write path. Every write (Increment, Add, a bulk
// write, AddOnce and RemoveOnce, a counter cache's deltas, a Buffer's flush)
// becomes row deltas, Row: a counter's total row and, for a bucketed
// counter, its bucket's row (RowsOf). An Engine runs them, all or none:
//
//   - inside the caller's transaction, as multi-row upserts on its connection
//     (nothing is coalesced or retried there);
//   - outside one, through a coalescer (group commit in the client: one
//     multi-row upsert for every caller queued while a statement was in
//     flight), with an outcome marker in the same statement, so that an
//     error other than the caller's context always means "not counted";
//   - an AddOnce key rides in the same batch: its key row goes in with one
//     INSERT … RETURNING, and only new keys' deltas join the upsert.
//
// The Engine knows nothing of models or the public API: the root package
// resolves models and Refs to rows and hands them over.
package write

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/session"
)

// Config is the part of slotted.Config the write path reads, defaults
// applied.
type Config struct {
	Table, OnceTable      string
	MaxBatch, MaxInFlight int
	Linger, BatchTimeout  time.Duration
	DisableCoalescing     bool
	OutcomeMarkers        bool
	// Now is slotted.Config.Now: once keys expire by it (ExpireAfter), so
	// tests that inject a clock can expire them (nil: time.Now).
	Now func() time.Time
}

// Statements are the plugin's fixed statements as rendered at Initialize
// (clause.go in the root): the upsert of one row and the sum of one counter,
// and which value goes to each of their placeholders. The Engine runs the
// upsert; internal/query the sum.
type Statements struct {
	Upsert     string
	UpsertArgs []Arg
	Sum        string
	SumArgs    []Arg
}

// Hooks are what the write path asks of the plugin around it.
type Hooks struct {
	// RenderBatch renders the n-row upsert with gorm's builders, and the
	// placeholder order of one row.
	RenderBatch func(n int) (string, []Arg, error)
	// BatchDone, if set, reports a coalesced statement (to Config.Observer)
	// and returns err; nil when no Observer is configured.
	BatchDone func(ctx context.Context, start time.Time, rows, writes int, err error) error
}

// Engine runs row deltas; one per Plugin.
type Engine struct {
	cfg      Config
	dialect  dialect.Dialect
	sessions *session.Sessions
	sql      Statements
	hooks    Hooks

	batch      batchStatements // multi-row upserts by shape (batch.go)
	coalescers sync.Map        // coalesceKey -> *coalescer (coalesce.go)
	batching   batchStats
	stats      struct{ settledLanded, settledLost atomic.Uint64 }
}

// New returns the Engine of one Plugin.
func New(cfg Config, d dialect.Dialect, s *session.Sessions, st Statements, h Hooks) *Engine {
	return &Engine{cfg: cfg, dialect: d, sessions: s, sql: st, hooks: h}
}

// now is the clock once keys expire by.
func (p *Engine) now() time.Time {
	if p.cfg.Now == nil {
		return time.Now().UTC()
	}
	return p.cfg.Now().UTC()
}

func (p *Engine) renderBatch(n int) (string, []Arg, error) { return p.hooks.RenderBatch(n) }

func (p *Engine) batchDone(ctx context.Context, start time.Time, rows, writes int, err error) error {
	if p.hooks.BatchDone == nil {
		return err
	}
	return p.hooks.BatchDone(ctx, start, rows, writes, err)
}

// Counts are the Engine's counters since it started (slotted.Stats).
type Counts struct {
	Batches, BatchedWrites     uint64
	BatchRows                  map[int]uint64
	Waiting                    int64
	SettledLanded, SettledLost uint64
}

// Counts returns the Engine's counters.
func (p *Engine) Counts() Counts {
	c := Counts{SettledLanded: p.stats.settledLanded.Load(), SettledLost: p.stats.settledLost.Load()}
	p.batching.report(&c)
	return c
}

// CountSettled counts an outcome settled from its marker outside the
// Engine's own statements (a Buffer's flush).
func (p *Engine) CountSettled(landed bool) {
	if landed {
		p.stats.settledLanded.Add(1)
	} else {
		p.stats.settledLost.Add(1)
	}
}
