package slotted

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// DiagnoseOptions configures Diagnose.
type DiagnoseOptions struct {
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

// Diagnosis is where a running application stands.
type Diagnosis struct {
	Dialect string
	// LockWaits has one entry per table (the counter table first, then
	// ParentTables): sessions waiting right now for a row lock in it. Empty on
	// SQLite, which locks the whole database and has no view of waiters: see Stats.
	LockWaits []TableLockWaits
	// Server is the server's own lock-wait counters since it started:
	// MySQL/MariaDB Innodb_row_lock_* and Innodb_deadlocks, PostgreSQL
	// pg_stat_database.deadlocks. Empty on SQLite.
	Server map[string]int64
	// MostRows are the counters with the most slot rows (compaction
	// candidates); LargestTotals those with the largest totals.
	MostRows      []CounterInfo
	LargestTotals []CounterInfo
	// Stats are this process's retries and lock conflicts.
	Stats Stats
}

// TableLockWaits counts the sessions waiting for a row lock in one table.
type TableLockWaits struct {
	Table   string
	Waiting int64
	// Longest is how long the oldest waiter has waited (MySQL/MariaDB) or has
	// been running the statement that waits (PostgreSQL).
	Longest time.Duration
}

// CounterInfo is one counter's footprint.
type CounterInfo struct {
	Ref
	Rows  int64
	Total int64
}

// Diagnose reports lock waits on the counter table and on ParentTables, the
// server's lock counters, the hottest counters and the plugin's own retry
// statistics. It only reads. The queries it runs:
//
// MariaDB (information_schema, InnoDB):
//
//	SELECT l.lock_table, COUNT(DISTINCT w.requesting_trx_id), MAX(TIMESTAMPDIFF(MICROSECOND, t.trx_wait_started, NOW(6)))
//	FROM information_schema.innodb_lock_waits w
//	JOIN information_schema.innodb_locks l ON l.lock_id = w.requested_lock_id
//	JOIN information_schema.innodb_trx t ON t.trx_id = w.requesting_trx_id
//	WHERE l.lock_table LIKE '`<current database>`.%' GROUP BY l.lock_table
//	SHOW GLOBAL STATUS LIKE 'Innodb_row_lock%'   -- and Innodb_deadlocks
//
// MySQL 8 (where those views are gone): the same from performance_schema.data_lock_waits
// and data_locks. InnoDB serves the information_schema views from a snapshot
// it refreshes only when it has not been read for 100 ms, so poll Diagnose
// less often than that; Innodb_row_lock_current_waits in Server is live.
//
// PostgreSQL (waiting backends holding a lock on the table, i.e. inside a
// statement on it; a transaction that touched several of the tables is
// counted under each):
//
//	SELECT c.relname, count(DISTINCT a.pid), max(now() - a.query_start)
//	FROM pg_stat_activity a
//	JOIN pg_locks l ON l.pid = a.pid AND l.granted AND l.locktype = 'relation'
//	JOIN pg_class c ON c.oid = l.relation
//	WHERE a.wait_event_type = 'Lock' AND a.datname = current_database() AND c.relname IN (...)
//	GROUP BY c.relname
//	SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()
//
// All databases (the hottest counters):
//
//	SELECT record_type, record_id, COUNT(*), SUM(count) FROM slotted_counters [WHERE record_type = ?]
//	GROUP BY record_type, record_id ORDER BY COUNT(*) DESC LIMIT 10     -- and ORDER BY SUM(count) DESC
func Diagnose(db *gorm.DB, opts DiagnoseOptions) (Diagnosis, error) {
	p, err := pluginOf(db)
	if err != nil {
		return Diagnosis{}, err
	}
	if opts.Top == 0 {
		opts.Top = 10
	}
	if opts.Top < 0 {
		return Diagnosis{}, fmt.Errorf("%w: DiagnoseOptions.Top %d", ErrInvalidConfig, opts.Top)
	}
	d := Diagnosis{Dialect: db.Dialector.Name(), Stats: p.Stats(), Server: map[string]int64{}}
	tables := append([]string{p.cfg.Table}, opts.ParentTables...)
	tx := db.Session(&gorm.Session{NewDB: true})
	var waits map[string]TableLockWaits
	switch d.Dialect {
	case "mysql":
		waits, err = mysqlLockWaits(tx)
		if err == nil {
			err = mysqlServerCounters(tx, d.Server)
		}
	case "postgres":
		waits, err = postgresLockWaits(tx, tables)
		if err == nil {
			var deadlocks int64
			err = tx.Raw("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&deadlocks).Error
			d.Server["deadlocks"] = deadlocks
		}
	}
	if err != nil {
		return d, fmt.Errorf("slotted: reading lock waits: %w", err)
	}
	if waits != nil {
		for _, t := range tables {
			w := waits[bareTable(t)]
			w.Table = t
			d.LockWaits = append(d.LockWaits, w)
		}
	}
	if !opts.SkipHottest {
		if d.MostRows, err = p.hottest(tx, opts, false); err == nil {
			d.LargestTotals, err = p.hottest(tx, opts, true)
		}
	}
	return d, err
}

// bareTable drops a schema and quotes: `db`.`posts` and public.posts are posts.
func bareTable(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return strings.Trim(name, "`\"")
}

func mysqlLockWaits(tx *gorm.DB) (map[string]TableLockWaits, error) {
	type row struct {
		Tbl     string
		Waiting int64
		Micros  *int64
	}
	var rows []row
	err := tx.Raw(`SELECT l.lock_table AS tbl, COUNT(DISTINCT w.requesting_trx_id) AS waiting,
		MAX(TIMESTAMPDIFF(MICROSECOND, t.trx_wait_started, NOW(6))) AS micros
		FROM information_schema.innodb_lock_waits w
		JOIN information_schema.innodb_locks l ON l.lock_id = w.requested_lock_id
		JOIN information_schema.innodb_trx t ON t.trx_id = w.requesting_trx_id
		WHERE l.lock_table LIKE CONCAT(CHAR(96), DATABASE(), CHAR(96), '.%')
		GROUP BY l.lock_table`).Scan(&rows).Error
	if err != nil { // MySQL 8 removed those views
		rows = nil
		err = tx.Raw(`SELECT l.object_name AS tbl, COUNT(DISTINCT w.requesting_engine_transaction_id) AS waiting,
			MAX(TIMESTAMPDIFF(MICROSECOND, t.trx_wait_started, NOW(6))) AS micros
			FROM performance_schema.data_lock_waits w
			JOIN performance_schema.data_locks l ON l.engine_lock_id = w.requesting_engine_lock_id
			JOIN information_schema.innodb_trx t ON t.trx_id = w.requesting_engine_transaction_id
			WHERE l.object_schema = DATABASE() GROUP BY l.object_name`).Scan(&rows).Error
	}
	if err != nil {
		return nil, err
	}
	out := map[string]TableLockWaits{}
	for _, r := range rows {
		w := out[bareTable(r.Tbl)]
		w.Waiting += r.Waiting
		if r.Micros != nil {
			w.Longest = max(w.Longest, time.Duration(*r.Micros)*time.Microsecond)
		}
		out[bareTable(r.Tbl)] = w
	}
	return out, nil
}

func mysqlServerCounters(tx *gorm.DB, into map[string]int64) error {
	rows, err := tx.Raw("SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Innodb_row_lock%' OR Variable_name = 'Innodb_deadlocks'").Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var value int64
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		into[name] = value
	}
	return rows.Err()
}

func postgresLockWaits(tx *gorm.DB, tables []string) (map[string]TableLockWaits, error) {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = bareTable(t)
	}
	type row struct {
		Relname string
		Waiting int64
		Micros  *float64
	}
	var rows []row
	err := tx.Raw(`SELECT c.relname, count(DISTINCT a.pid) AS waiting,
		EXTRACT(EPOCH FROM max(now() - a.query_start)) * 1000000 AS micros
		FROM pg_stat_activity a
		JOIN pg_locks l ON l.pid = a.pid AND l.granted AND l.locktype = 'relation'
		JOIN pg_class c ON c.oid = l.relation
		WHERE a.wait_event_type = 'Lock' AND a.datname = current_database() AND c.relname IN ?
		GROUP BY c.relname`, names).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := map[string]TableLockWaits{}
	for _, r := range rows {
		w := TableLockWaits{Waiting: r.Waiting}
		if r.Micros != nil {
			w.Longest = time.Duration(*r.Micros) * time.Microsecond
		}
		out[r.Relname] = w
	}
	return out, nil
}

// hottest lists the top counters by number of slot rows, or by total.
func (p *Plugin) hottest(tx *gorm.DB, opts DiagnoseOptions, byTotal bool) ([]CounterInfo, error) {
	rt, rid, cnt := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}, clause.Column{Name: "count"}
	orderBy := clause.Expr{SQL: "COUNT(*) DESC"}
	if byTotal {
		orderBy = clause.Expr{SQL: "SUM(?) DESC", Vars: []any{cnt}}
	}
	q := tx.Table(p.cfg.Table).Select("?, ?, COUNT(*), SUM(?)", rt, rid, cnt).
		Clauses(clause.GroupBy{Columns: []clause.Column{rt, rid}}, clause.OrderBy{Expression: orderBy}).Limit(opts.Top)
	if opts.RecordType != "" {
		q = q.Where(clause.Eq{Column: rt, Value: opts.RecordType})
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []CounterInfo
	for rows.Next() {
		var c CounterInfo
		if err := rows.Scan(&c.Type, &c.ID, &c.Rows, &c.Total); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
