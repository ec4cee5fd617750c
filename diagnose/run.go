// Package diagnose tells a running application where its slotted counters
// stand: who is waiting for row locks right now on the counter table and on
// the tables named, the server's own lock counters, the counters with the
// most slot rows (compaction candidates) and the largest totals, and the
// plugin's retry statistics.
//
//	r, err := diagnose.Run(db, diagnose.Options{ParentTables: []string{"posts"}})
//
// LockWaits and ServerCounters are the lock probes on their own, for tools
// that sample them (cmd/slotbench does). Everything only reads, through gorm,
// on the primary: see Run.
package diagnose

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted"
)

// Options configures Run.
type Options struct {
	// ParentTables are tables whose row-lock waits are reported beside the
	// counter table's, e.g. "posts" where a single-row counter lived before.
	ParentTables []string
	// Top is how many of the hottest counters to list. Default: 10.
	Top int
	// RecordType limits the hottest-counter scan to one record_type. The scan
	// reads every row it covers (a GROUP BY over the table, or over that
	// record_type's key range), so give one on large tables.
	RecordType string
	// SkipHottest skips the hottest-counter scan.
	SkipHottest bool
}

// Report is where a running application stands.
type Report struct {
	Dialect string
	// LockWaits has one entry per table (the counter table first, then
	// ParentTables): sessions waiting right now for a row lock in it. Empty on
	// SQLite, which locks the whole database and has no view of waiters: see Stats.
	LockWaits []TableLockWaits
	// Server is the server's own lock counters since it started (ServerCounters).
	// Empty on SQLite.
	Server map[string]int64
	// MostRows are the counters with the most slot rows (compaction
	// candidates); LargestTotals those with the largest totals.
	MostRows      []Counter
	LargestTotals []Counter
	// Stats are this process's retries and lock conflicts (slotted.StatsOf).
	Stats slotted.Stats
}

// Counter is one counter's footprint.
type Counter struct {
	slotted.Ref
	Rows  int64
	Total int64
}

// Run reports lock waits on the counter table and on ParentTables
// (LockWaits), the server's lock counters (ServerCounters), the hottest
// counters and the plugin's own retry statistics. It only reads. db must have
// the slotted plugin registered (else the error wraps slotted.ErrNotRegistered);
// a negative Top is an error wrapping slotted.ErrInvalidConfig.
//
// The hottest counters, on every database:
//
//	SELECT record_type, record_id, COUNT(*), SUM(count) FROM slotted_counters [WHERE record_type = ?]
//	GROUP BY record_type, record_id ORDER BY COUNT(*) DESC LIMIT 10     -- and ORDER BY SUM(count) DESC
//
// Every statement goes through db: its context, its transaction if it is one,
// its logger and its dbresolver routing. Locks are the primary's business, so
// the statements go to the primary (what db.Clauses(dbresolver.Write) does)
// unless db carries dbresolver.Read, and dbresolver's per-table resolvers see
// the counter table.
func Run(db *gorm.DB, opts Options) (Report, error) {
	stats, err := slotted.StatsOf(db)
	if err != nil {
		return Report{}, err
	}
	if opts.Top == 0 {
		opts.Top = 10
	}
	if opts.Top < 0 {
		return Report{}, fmt.Errorf("%w: diagnose.Options.Top %d", slotted.ErrInvalidConfig, opts.Top)
	}
	table := counterTable(db)
	r := Report{Dialect: db.Dialector.Name(), Stats: stats}
	if r.Server, err = serverCounters(db, table); err != nil {
		return r, fmt.Errorf("slotted/diagnose: reading the server's lock counters: %w", err)
	}
	if r.LockWaits, err = lockWaits(db, table, append([]string{table}, opts.ParentTables...)); err != nil {
		return r, fmt.Errorf("slotted/diagnose: reading lock waits: %w", err)
	}
	if !opts.SkipHottest {
		if r.MostRows, err = hottest(db, table, opts, false); err == nil {
			r.LargestTotals, err = hottest(db, table, opts, true)
		}
	}
	return r, err
}

// counterTable is the table of the plugin registered on db (StatsOf has
// checked that there is one).
func counterTable(db *gorm.DB) string {
	for _, p := range db.Config.Plugins {
		if sp, ok := p.(*slotted.Plugin); ok {
			return sp.Config().Table
		}
	}
	return slotted.DefaultTable
}

// hottest lists the top counters by number of slot rows, or by total.
func hottest(db *gorm.DB, table string, opts Options, byTotal bool) ([]Counter, error) {
	rt, rid, cnt := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}, clause.Column{Name: "count"}
	orderBy := clause.Expr{SQL: "COUNT(*) DESC"}
	if byTotal {
		orderBy = clause.Expr{SQL: "SUM(?) DESC", Vars: []any{cnt}}
	}
	q := session(db, table).Select("?, ?, COUNT(*), SUM(?)", rt, rid, cnt).
		Clauses(clause.GroupBy{Columns: []clause.Column{rt, rid}}, clause.OrderBy{Expression: orderBy}).Limit(opts.Top)
	if opts.RecordType != "" {
		q = q.Where(clause.Eq{Column: rt, Value: opts.RecordType})
	} else {
		// An outcome marker's count is a sequence number that grows with every statement: it
		// would top the totals without being a counter.
		q = q.Where(clause.Neq{Column: rt, Value: slotted.MarkerType})
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Counter
	for rows.Next() {
		var c Counter
		if err := rows.Scan(&c.Type, &c.ID, &c.Rows, &c.Total); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
