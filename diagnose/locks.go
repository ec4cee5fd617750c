package diagnose

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// TableLockWaits counts the sessions waiting for a row lock in one table.
type TableLockWaits struct {
	Table   string
	Waiting int64
	// Longest is how long the oldest waiter has waited (MySQL/MariaDB) or has
	// been running the statement that waits (PostgreSQL).
	Longest time.Duration
}

// LockWaits counts, for each of tables (in that order), the sessions of the
// current database waiting right now for a row lock in it. Tables may be
// schema-qualified or quoted; they are matched by their bare name. It returns
// nil on SQLite, which locks the whole database and has no view of waiters.
//
// MariaDB (MySQL 8, where these views are gone: performance_schema.data_lock_waits
// and data_locks instead):
//
//	SELECT l.lock_table, COUNT(DISTINCT w.requesting_trx_id), MAX(TIMESTAMPDIFF(MICROSECOND, t.trx_wait_started, NOW(6)))
//	FROM information_schema.innodb_lock_waits w
//	JOIN information_schema.innodb_locks l ON l.lock_id = w.requested_lock_id
//	JOIN information_schema.innodb_trx t ON t.trx_id = w.requesting_trx_id
//	WHERE l.lock_table LIKE '`<current database>`.%' GROUP BY l.lock_table
//
// InnoDB serves those views from a snapshot it refreshes only when it has not
// been read for 100 ms, so poll less often than that.
//
// PostgreSQL: backends waiting on a lock while holding a lock on the table,
// that is inside a statement on it (a transaction that touched several of the
// tables is counted under each):
//
//	SELECT c.relname, count(DISTINCT a.pid), max(now() - a.query_start)
//	FROM pg_stat_activity a
//	JOIN pg_locks l ON l.pid = a.pid AND l.granted AND l.locktype = 'relation'
//	JOIN pg_class c ON c.oid = l.relation
//	WHERE a.wait_event_type = 'Lock' AND a.datname = current_database() AND c.relname IN (?)
//	GROUP BY c.relname
//
// The queries go through db (its context, transaction, logger and
// dbresolver routing) and are sent to the primary unless db carries
// dbresolver.Read; dbresolver's per-table resolvers see the first table.
func LockWaits(db *gorm.DB, tables ...string) ([]TableLockWaits, error) {
	if db == nil || db.Config == nil {
		return nil, gorm.ErrInvalidDB
	}
	if len(tables) == 0 {
		return nil, nil
	}
	return lockWaits(db, tables[0], tables)
}

// lockWaits runs the query for db's dialect on sessions routed by route (a
// table name for dbresolver's per-table resolvers).
func lockWaits(db *gorm.DB, route string, tables []string) ([]TableLockWaits, error) {
	q := func() *gorm.DB { return session(db, route) }
	var (
		byTable map[string]TableLockWaits
		err     error
	)
	switch db.Dialector.Name() {
	case "mysql":
		byTable, err = mysqlLockWaits(q)
	case "postgres":
		byTable, err = postgresLockWaits(q(), tables)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]TableLockWaits, len(tables))
	for i, t := range tables {
		out[i] = byTable[bareTable(t)]
		out[i].Table = t
	}
	return out, nil
}

// bareTable drops a schema and quotes: `db`.`posts` and public.posts are posts.
func bareTable(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return strings.Trim(name, "`\"")
}

func mysqlLockWaits(q func() *gorm.DB) (map[string]TableLockWaits, error) {
	type row struct {
		Tbl     string
		Waiting int64
		Micros  *int64
	}
	var rows []row
	err := q().Raw(`SELECT l.lock_table AS tbl, COUNT(DISTINCT w.requesting_trx_id) AS waiting,
		MAX(TIMESTAMPDIFF(MICROSECOND, t.trx_wait_started, NOW(6))) AS micros
		FROM information_schema.innodb_lock_waits w
		JOIN information_schema.innodb_locks l ON l.lock_id = w.requested_lock_id
		JOIN information_schema.innodb_trx t ON t.trx_id = w.requesting_trx_id
		WHERE l.lock_table LIKE CONCAT(CHAR(96), DATABASE(), CHAR(96), '.%')
		GROUP BY l.lock_table`).Scan(&rows).Error
	if err != nil { // MySQL 8 removed those views
		rows = nil
		err = q().Raw(`SELECT l.object_name AS tbl, COUNT(DISTINCT w.requesting_engine_transaction_id) AS waiting,
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

// ServerCounters returns the server's own cumulative lock counters since it
// started, under the server's names:
//
//	MySQL/MariaDB: SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Innodb_row_lock%' OR Variable_name = 'Innodb_deadlocks'
//	  Innodb_row_lock_waits, Innodb_row_lock_time (ms), Innodb_row_lock_time_avg, Innodb_row_lock_time_max,
//	  Innodb_row_lock_current_waits (live), and Innodb_deadlocks on MariaDB only
//	PostgreSQL:    SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()
//	  deadlocks (backends report it lazily: it can lag by about a second)
//
// The map is empty on SQLite. Take two readings and subtract to measure a
// period; the counters are server-wide, other clients' waits included. Routing
// is LockWaits's.
func ServerCounters(db *gorm.DB) (map[string]int64, error) {
	if db == nil || db.Config == nil {
		return nil, gorm.ErrInvalidDB
	}
	return serverCounters(db, "")
}

func serverCounters(db *gorm.DB, route string) (map[string]int64, error) {
	tx := session(db, route)
	out := map[string]int64{}
	switch db.Dialector.Name() {
	case "mysql":
		rows, err := tx.Raw("SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Innodb_row_lock%' OR Variable_name = 'Innodb_deadlocks'").Rows()
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var name, value string
			if err := rows.Scan(&name, &value); err != nil {
				return nil, err
			}
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("status %s = %q: %w", name, value, err)
			}
			out[name] = n
		}
		return out, rows.Err()
	case "postgres":
		var deadlocks int64
		if err := tx.Raw("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&deadlocks).Error; err != nil {
			return nil, err
		}
		out["deadlocks"] = deadlocks
	}
	return out, nil
}
