package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
	Workers         []int   `json:"workers"`
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

// progressFunc is told about each finished cell: done of total, wall time so
// far and an estimate of the time left.
type progressFunc func(done, total int, c Cell, elapsed, eta time.Duration)

// sweep runs every cell on scratch tables named prefix+"counters" (the
// plugin's) and prefix+"rows" (the baseline's), and drops them at the end.
type sweep struct {
	opts     Options
	target   *target
	prefix   string
	progress progressFunc
	// onLoad, when set, is called as each cell's timed load starts (tests
	// interrupt a sweep mid-cell with it).
	onLoad func(workers, slots int)

	admin *gorm.DB // small pool for set-up, probes, read-backs and cleanup
	probe probe
}

// newSweep prepares a sweep of opts.DSN; close removes a temporary SQLite
// file, if one was made. The run's PostgreSQL sessions are named after its
// prefix, so the lock sampler counts this run's backends only, not those of
// another slotbench running beside it.
func newSweep(opts Options) (*sweep, error) {
	prefix := scratchPrefix()
	t, err := newTarget(opts.DSN, strings.TrimSuffix(prefix, "_"))
	if err != nil {
		return nil, err
	}
	return &sweep{opts: opts, target: t, prefix: prefix}, nil
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
		return nil, fmt.Errorf("connecting: %w", err)
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

// Run measures every cell. On an error or a cancelled ctx it returns the cells
// finished so far with the error; the scratch tables are dropped in every case
// (with a fresh context, since ctx may be the one that ended).
func (s *sweep) Run(ctx context.Context) (res *Result, err error) {
	o := s.opts
	res = &Result{Settings: Settings{
		Slots: o.Slots, Workers: o.Workers, DurationSeconds: o.Duration.Seconds(), MaxOps: o.MaxOps,
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
	if err := connectionRoom(ctx, s.admin, s.target.dialect, o.Workers[len(o.Workers)-1]); err != nil {
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
	s.probe = newProbe(s.target.dialect, s.admin, s.target.appName)

	total := len(o.Workers) * (1 + len(o.Slots))
	start := time.Now()
	for _, w := range o.Workers {
		for _, slots := range append([]int{0}, o.Slots...) {
			c, err := s.runCell(ctx, w, slots)
			if err != nil {
				res.Recommendation = recommendFor(res.Cells, o.Expect)
				what := "single-row baseline"
				if slots > 0 {
					what = fmt.Sprintf("%d slots", slots)
				}
				if ctx.Err() != nil {
					return res, fmt.Errorf("interrupted during %d workers, %s: %w", w, what, ctx.Err())
				}
				return res, fmt.Errorf("%d workers, %s: %w", w, what, err)
			}
			res.Cells = append(res.Cells, c)
			if s.progress != nil {
				done := len(res.Cells)
				elapsed := time.Since(start)
				eta := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
				s.progress(done, total, c, elapsed, eta)
			}
		}
	}
	res.Recommendation = recommendFor(res.Cells, o.Expect)
	return res, nil
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

// runCell measures one cell on a pool of its own sized to the workers.
func (s *sweep) runCell(ctx context.Context, workers, slots int) (Cell, error) {
	c := Cell{Workers: workers, Slots: slots, Method: methodSingleRow}
	db, err := s.open(workers)
	if err != nil {
		return c, err
	}
	defer closeDB(db)
	sqlDB, err := db.DB()
	if err != nil {
		return c, err
	}

	var (
		op, warm  func(context.Context) error
		readBack  func(context.Context) (int64, error)
		afterCell func(context.Context) error
	)
	if slots == 0 {
		// The baseline: the row is set back to 0 so its n is this cell's count.
		table := clause.Table{Name: s.rowsTable()}
		if err := s.admin.WithContext(ctx).Exec("UPDATE ? SET n = 0 WHERE id = 1", table).Error; err != nil {
			return c, err
		}
		query := fmt.Sprintf(baselineSQL, db.Statement.Quote(s.rowsTable()))
		if s.target.dialect == dialectPostgres {
			query = strings.Replace(query, "?", "$1", 1) // raw database/sql: the driver's own placeholder
		}
		stmt, err := sqlDB.PrepareContext(ctx, query)
		if err != nil {
			return c, fmt.Errorf("preparing the baseline UPDATE: %w", err)
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
		c.Method = methodSlotted
		retries := s.opts.Retries
		if retries == 0 {
			retries = -1 // Config.MaxRetries: 0 means the default, -1 none
		}
		if err := db.Use(slotted.New(slotted.Config{
			Slots: slots, Table: s.countersTable(), MaxRetries: retries,
			DisableAutoFill: true, DisableAutoMigrate: true, // the admin pool migrated it
		})); err != nil {
			return c, err
		}
		// A fresh counter per cell starts at 0, so its total is this cell's count.
		ref := slotted.Ref{Type: "slotbench", ID: fmt.Sprintf("w%d.s%d", workers, slots)}
		warmRef := slotted.Ref{Type: "slotbench.warmup", ID: ref.ID}
		op = func(ctx context.Context) error { return slotted.AddRef(db.WithContext(ctx), ref, 1) }
		warm = func(ctx context.Context) error { return slotted.AddRef(db.WithContext(ctx), warmRef, 1) }
		readBack = func(ctx context.Context) (int64, error) { return slotted.CountRef(s.admin.WithContext(ctx), ref) }
		// Remove the cell's slot rows so the table stays small and every
		// cell starts from the same state.
		afterCell = func(ctx context.Context) error {
			return s.admin.WithContext(ctx).Exec("DELETE FROM ? WHERE record_type IN (?, ?) AND record_id = ?",
				clause.Table{Name: s.countersTable()}, ref.Type, warmRef.Type, ref.ID).Error
		}
	}

	if err := openConns(ctx, sqlDB, workers); err != nil {
		return c, err
	}
	if err := warmUp(ctx, workers, warm); err != nil {
		return c, fmt.Errorf("warm-up: %w", err)
	}
	statsBefore := slotted.Stats{}
	if slots > 0 {
		if statsBefore, err = slotted.StatsOf(db); err != nil {
			return c, err
		}
	}
	finish, err := s.probe.begin(ctx)
	if err != nil {
		return c, err
	}
	if s.onLoad != nil {
		s.onLoad(workers, slots)
	}
	load, err := runLoad(ctx, workers, s.opts.Duration, s.opts.MaxOps, op)
	ev, perr := finish(ctx)
	if err != nil {
		return c, err
	}
	if perr != nil {
		return c, perr
	}

	c.Ops, c.Errors, c.StoppedBy = load.ok, load.errs, load.stoppedBy
	c.Seconds = load.elapsed.Seconds()
	if c.Seconds > 0 {
		c.OpsPerSec = float64(c.Ops) / c.Seconds
	}
	c.P50Ms, c.P99Ms = ms(load.hist.quantile(0.50)), ms(load.hist.quantile(0.99))
	var busySeen int64 = c.Errors.Busy
	if slots > 0 {
		st, err := slotted.StatsOf(db)
		if err != nil {
			return c, err
		}
		c.Retries = st.Retries - statsBefore.Retries
		for kind, n := range st.Conflicts {
			if d := n - statsBefore.Conflicts[kind]; d > 0 {
				if c.Conflicts == nil {
					c.Conflicts = map[string]uint64{}
				}
				c.Conflicts[kind.String()] = d
				if kind == slotted.Busy {
					busySeen += int64(d)
				}
			}
		}
	}
	if ev.SQLite != nil {
		ev.SQLite.Busy = busySeen
	}
	c.Evidence = ev
	if c.Total, err = readBack(ctx); err != nil {
		return c, fmt.Errorf("reading the total back: %w", err)
	}
	c.Exact = c.Total == c.Ops
	if afterCell != nil {
		if err := afterCell(ctx); err != nil {
			return c, err
		}
	}
	return c, nil
}
