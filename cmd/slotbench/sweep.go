package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// cleanupTimeout bounds dropping the scratch tables after an interrupt or
// error, when the sweep's own context is already done.
const cleanupTimeout = 30 * time.Second

// Result is everything a sweep measured.
type Result struct {
	Database       DBInfo         `json:"database"`
	Settings       Settings       `json:"settings"`
	Cells          []Cell         `json:"cells"`
	Recommendation Recommendation `json:"recommendation"`
	Interrupted    bool           `json:"interrupted"`
}

// Settings echoes what was run, so a JSON document stands on its own.
type Settings struct {
	Slots           []int   `json:"slots"`
	Workers         []int   `json:"workers"`   // per instance
	Instances       int     `json:"instances"` // separate processes per cell, each with its own pool and coalescer
	Repeat          int     `json:"repeat"`    // runs per cell, interleaved
	DurationSeconds float64 `json:"duration_seconds"`
	MaxOps          int64   `json:"max_ops"`
	Expect          int     `json:"expect"`
	ExpectRequested int     `json:"expect_requested,omitempty"`
	PluginRetries   int     `json:"plugin_retries"`
	Baseline        string  `json:"baseline"`
	ScratchPrefix   string  `json:"scratch_prefix"`
}

// baselineSQL is the statement users run today. It goes through
// database/sql as a prepared *sql.Stmt on the same pool gorm opened: the
// fastest way to send it, so the plugin is compared against the best case.
const baselineSQL = "UPDATE %s SET n = n + 1 WHERE id = ?"

// progress is told about each finished run: done of total runs, the round,
// the run and its cell so far, wall time so far and an estimate of the time left.
type progress struct {
	Done, Total, Round int
	Cell               Cell
	Run                Sample
	Elapsed, ETA       time.Duration
}

// sweep runs every cell on scratch tables named prefix+"counters" (the
// plugin's) and prefix+"rows" (the baseline's), and drops them at the end.
type sweep struct {
	opts     Options
	target   *target
	prefix   string
	progress func(progress)
	// onLoad, when set, is called as each run's timed load starts (tests
	// interrupt a sweep mid-cell with it).
	onLoad func(workers, slots, round int)
	// notice, when set, is told about a run tried again.
	notice func(string)
	// runOne measures one run; runCell, but tests replace it.
	runOne       func(ctx context.Context, workers, slots, round int) (*measured, error)
	connectPause time.Duration

	admin *gorm.DB // small pool for set-up, probes, read-backs and cleanup
	probe probe
}

// newSweep prepares a sweep of opts.DSN; close removes a temporary SQLite
// file, if one was made.
func newSweep(opts Options) (*sweep, error) {
	t, err := newTarget(opts.Driver, opts.DSN)
	if err != nil {
		return nil, err
	}
	s := &sweep{opts: opts, target: t, prefix: scratchPrefix(), connectPause: connectPause}
	s.runOne = s.runCell
	if opts.Instances > 1 {
		if t.dialect == dialectSQLite {
			t.cleanup()
			return nil, fmt.Errorf("%w: -instances needs MariaDB/MySQL or PostgreSQL (SQLite lets one writer in at a time)", errUsage)
		}
		s.runOne = s.runInstances
	}
	return s, nil
}

func (s *sweep) close() { s.target.cleanup() }

// scratchPrefix is random per run, so concurrent runs (and other programs'
// tables) never collide; lower case for MySQL on case-insensitive filesystems.
func scratchPrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "slotbench_" + hex.EncodeToString(b) + "_"
}

func (s *sweep) countersTable() string { return s.prefix + "counters" }
func (s *sweep) rowsTable() string     { return s.prefix + "rows" }

// open returns a new pool of conns connections with a fresh gorm.Config:
// configs must not be shared between gorm.Open calls (see NOTES.md), and a
// fresh *gorm.DB per cell gives each plugin its own statistics.
func (s *sweep) open(conns int) (*gorm.DB, error) {
	db, err := gorm.Open(s.target.dialector(), &gorm.Config{
		Logger:                 logger.Discard, // errors are counted and reported, not logged per statement
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConnect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	return db, nil
}

func closeDB(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// cellKey names a cell: a worker count and a slot count (0: the baseline).
type cellKey struct{ workers, slots int }

// Run measures every cell opts.Repeat times, in rounds: each round runs every
// cell once, in the opposite order from the round before, so that drift in
// the machine's load (other programs, the database's own background work)
// falls on every cell alike rather than on the ones measured last. On an error
// or a cancelled ctx it returns the cells measured so far with the error; the
// scratch tables are dropped in every case (with a fresh context, since ctx
// may be the one that ended).
func (s *sweep) Run(ctx context.Context) (res *Result, err error) {
	o := s.opts
	res = &Result{Settings: Settings{
		Slots: o.Slots, Workers: o.Workers, Instances: max(1, o.Instances), Repeat: o.Repeat, DurationSeconds: o.Duration.Seconds(), MaxOps: o.MaxOps,
		Expect: o.Expect, ExpectRequested: o.ExpectRequested, PluginRetries: o.Retries,
		Baseline:      "prepared " + fmt.Sprintf(baselineSQL, s.rowsTable()) + " (database/sql *sql.Stmt, id = 1)",
		ScratchPrefix: s.prefix,
	}}
	if s.admin, err = s.open(2); err != nil {
		return res, err
	}
	defer closeDB(s.admin)
	if res.Database, err = dbInfo(ctx, s.admin, s.target.dialect); err != nil {
		return res, err
	}
	if err := connectionRoom(ctx, s.admin, s.target.dialect, max(1, o.Instances)*o.Workers[len(o.Workers)-1]); err != nil {
		if o.Instances > 1 { // the count is instances × workers, which the message calls -workers
			err = fmt.Errorf("-instances %d × -workers %d connections: %w", o.Instances, o.Workers[len(o.Workers)-1], err)
		}
		return res, err
	}
	defer func() {
		if derr := s.dropTables(); derr != nil {
			err = errors.Join(err, derr)
		}
		res.Interrupted = ctx.Err() != nil
	}()
	if err := s.createTables(ctx); err != nil {
		return res, err
	}
	s.probe = newProbe(s.target.dialect, s.admin, []string{s.countersTable(), s.rowsTable()})

	var order []cellKey
	for _, w := range o.Workers {
		for _, slots := range append([]int{0}, o.Slots...) {
			order = append(order, cellKey{w, slots})
		}
	}
	cells := make(map[cellKey]*Cell, len(order))
	finish := func() {
		res.Cells = res.Cells[:0]
		for _, k := range order {
			if c := cells[k]; c != nil {
				res.Cells = append(res.Cells, *c)
			}
		}
		res.Recommendation = recommendForInstances(res.Cells, max(1, o.Instances), o.Expect, s.target.dialect)
	}
	total, done := len(order)*o.Repeat, 0
	start := time.Now()
	for round := 1; round <= o.Repeat; round++ {
		seq := slices.Clone(order)
		if round%2 == 0 {
			slices.Reverse(seq)
		}
		for _, k := range seq {
			m, err := s.measure(ctx, k, round)
			if err != nil {
				finish()
				what := "single-row baseline"
				if k.slots > 0 {
					what = fmt.Sprintf("%d slots", k.slots)
				}
				if ctx.Err() != nil {
					return res, fmt.Errorf("interrupted during %d workers, %s (round %d): %w", k.workers, what, round, ctx.Err())
				}
				return res, fmt.Errorf("%d workers, %s (round %d): %w", k.workers, what, round, err)
			}
			c := cells[k]
			if c == nil {
				c = &Cell{Workers: k.workers, Slots: k.slots, Method: m.method}
				cells[k] = c
			}
			c.add(m)
			done++
			if s.progress != nil {
				elapsed := time.Since(start)
				eta := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
				s.progress(progress{Done: done, Total: total, Round: round, Cell: *c, Run: m.sample, Elapsed: elapsed, ETA: eta})
			}
		}
	}
	finish()
	return res, nil
}

// errConnect marks a run that failed while opening its connections, before
// anything was measured or written, so that it can be run again.
var errConnect = errors.New("connecting")

// A run that cannot connect is tried connectTries times in all, waiting
// connectPause, then twice that, and so on, in between (18 s at most).
const (
	connectTries = 4
	connectPause = 3 * time.Second
)

// measure runs one run of a cell, and runs it again when it could not open
// its connections: on a shared server other clients come and go (PostgreSQL's
// "too many clients" when they hold most of max_connections for a moment).
func (s *sweep) measure(ctx context.Context, k cellKey, round int) (*measured, error) {
	for try := 1; ; try++ {
		m, err := s.runOne(ctx, k.workers, k.slots, round)
		if err == nil || !errors.Is(err, errConnect) || try == connectTries || ctx.Err() != nil {
			return m, err
		}
		pause := time.Duration(try) * s.connectPause
		if s.notice != nil {
			s.notice(fmt.Sprintf("%d workers, %d slots (round %d): %v; trying again in %v", k.workers, k.slots, round, err, pause))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// createTables creates the baseline's row table with rows 1 (measured) and
// 2 (warm-up), and the counter table through the plugin's own migration.
func (s *sweep) createTables(ctx context.Context) error {
	db := s.admin.WithContext(ctx)
	rows := clause.Table{Name: s.rowsTable()}
	if err := db.Exec("CREATE TABLE ? (id BIGINT NOT NULL PRIMARY KEY, n BIGINT NOT NULL)", rows).Error; err != nil {
		return fmt.Errorf("creating %s: %w", s.rowsTable(), err)
	}
	if err := db.Exec("INSERT INTO ? (id, n) VALUES (1, 0), (2, 0)", rows).Error; err != nil {
		return fmt.Errorf("filling %s: %w", s.rowsTable(), err)
	}
	// The admin pool gets a plugin too: it migrates the table once, and reads
	// counters back (CountRef) after each cell.
	if err := db.Use(slotted.New(slotted.Config{Table: s.countersTable(), DisableAutoFill: true})); err != nil {
		return fmt.Errorf("creating %s: %w", s.countersTable(), err)
	}
	return nil
}

// dropTables drops the scratch tables, and only those: both names are built
// from the run's random prefix, checked again here.
func (s *sweep) dropTables() error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var errs []error
	for _, name := range []string{s.countersTable(), s.rowsTable()} {
		if !strings.HasPrefix(name, "slotbench_") || !strings.HasPrefix(name, s.prefix) {
			panic("slotbench: refusing to drop " + name) // unreachable: a bug, not an input
		}
		if err := s.admin.WithContext(ctx).Exec("DROP TABLE IF EXISTS ?", clause.Table{Name: name}).Error; err != nil {
			errs = append(errs, fmt.Errorf("dropping scratch table %s (drop it by hand): %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// measured is one run of a cell, with what Cell.add folds into the cell.
type measured struct {
	method    string
	sample    Sample
	hist      histogram
	errs      Errors
	retries   uint64
	conflicts map[string]uint64
	evidence  Evidence
}

// runCell measures one run of a cell on a pool of its own sized to the workers.
func (s *sweep) runCell(ctx context.Context, workers, slots, round int) (*measured, error) {
	m := &measured{method: methodSingleRow, sample: Sample{Round: round}}
	db, err := s.open(workers)
	if err != nil {
		return nil, err
	}
	defer closeDB(db)
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}

	var (
		op, warm  func(context.Context) error
		readBack  func(context.Context) (int64, error)
		afterCell func(context.Context) error
	)
	if slots == 0 {
		// The baseline: the row is set back to 0 so its n is this run's count.
		table := clause.Table{Name: s.rowsTable()}
		if err := s.admin.WithContext(ctx).Exec("UPDATE ? SET n = 0 WHERE id = 1", table).Error; err != nil {
			return nil, err
		}
		query := fmt.Sprintf(baselineSQL, db.Statement.Quote(s.rowsTable()))
		if s.target.dialect == dialectPostgres {
			query = strings.Replace(query, "?", "$1", 1) // raw database/sql: the driver's own placeholder
		}
		stmt, err := sqlDB.PrepareContext(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("preparing the baseline UPDATE: %w", err)
		}
		defer stmt.Close()
		op = func(ctx context.Context) error { _, err := stmt.ExecContext(ctx, 1); return err }
		warm = func(ctx context.Context) error { _, err := stmt.ExecContext(ctx, 2); return err }
		readBack = func(ctx context.Context) (int64, error) {
			var n int64
			err := s.admin.WithContext(ctx).Raw("SELECT n FROM ? WHERE id = 1", table).Scan(&n).Error
			return n, err
		}
	} else {
		m.method = methodSlotted
		retries := s.opts.Retries
		if retries == 0 {
			retries = -1 // Config.MaxRetries: 0 means the default, -1 none
		}
		if err := db.Use(slotted.New(slotted.Config{
			Slots: slots, Table: s.countersTable(), MaxRetries: retries,
			DisableAutoFill: true, DisableAutoMigrate: true, // the admin pool migrated it
		})); err != nil {
			return nil, err
		}
		// A fresh counter per run starts at 0, so its total is this run's count.
		ref := slotted.Ref{Type: "slotbench", ID: fmt.Sprintf("w%d.s%d.r%d", workers, slots, round)}
		warmRef := slotted.Ref{Type: "slotbench.warmup", ID: ref.ID}
		op = func(ctx context.Context) error { return slotted.AddRef(db.WithContext(ctx), ref, 1) }
		warm = func(ctx context.Context) error { return slotted.AddRef(db.WithContext(ctx), warmRef, 1) }
		readBack = func(ctx context.Context) (int64, error) { return slotted.CountRef(s.admin.WithContext(ctx), ref) }
		// Remove the run's slot rows so the table stays small and every
		// run starts from the same state.
		afterCell = func(ctx context.Context) error {
			return s.admin.WithContext(ctx).Exec("DELETE FROM ? WHERE record_type IN (?, ?) AND record_id = ?",
				clause.Table{Name: s.countersTable()}, ref.Type, warmRef.Type, ref.ID).Error
		}
	}

	if err := openConns(ctx, sqlDB, workers); err != nil {
		return nil, fmt.Errorf("%w: %w", errConnect, err)
	}
	if err := warmUp(ctx, workers, warm); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	statsBefore := slotted.Stats{}
	if slots > 0 {
		if statsBefore, err = slotted.StatsOf(db); err != nil {
			return nil, err
		}
	}
	finish, err := s.probe.begin(ctx)
	if err != nil {
		return nil, err
	}
	if s.onLoad != nil {
		s.onLoad(workers, slots, round)
	}
	load, err := runLoad(ctx, workers, s.opts.Duration, s.opts.MaxOps, op)
	ev, perr := finish(ctx)
	if err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, perr
	}

	r := &m.sample
	r.Ops, r.StoppedBy = load.ok, load.stoppedBy
	r.Seconds = load.elapsed.Seconds()
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	m.hist, m.errs = load.hist, load.errs
	busySeen := m.errs.Busy
	if slots > 0 {
		st, err := slotted.StatsOf(db)
		if err != nil {
			return nil, err
		}
		m.retries = st.Retries - statsBefore.Retries
		for kind, n := range st.Conflicts {
			if d := n - statsBefore.Conflicts[kind]; d > 0 {
				if m.conflicts == nil {
					m.conflicts = map[string]uint64{}
				}
				m.conflicts[kind.String()] = d
				if kind == slotted.Busy {
					busySeen += int64(d)
				}
			}
		}
	}
	if ev.SQLite != nil {
		ev.SQLite.Busy = busySeen
	}
	m.evidence = ev
	if r.Total, err = readBack(ctx); err != nil {
		return nil, fmt.Errorf("reading the total back: %w", err)
	}
	r.Exact = r.Total == r.Ops
	if afterCell != nil {
		if err := afterCell(ctx); err != nil {
			return nil, err
		}
	}
	return m, nil
}
