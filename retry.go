package slotted

import "github.com/slotted-go/slotted/internal/session"

// Conflict is the kind of transient lock conflict a database error reports.
type Conflict = session.Conflict

const (
	NoConflict           = session.NoConflict           // not a lock conflict (or no error)
	Deadlock             = session.Deadlock             // MySQL 1213, PostgreSQL 40P01
	LockTimeout          = session.LockTimeout          // MySQL 1205 (innodb_lock_wait_timeout), PostgreSQL 55P03 (lock_timeout)
	SerializationFailure = session.SerializationFailure // PostgreSQL and CockroachDB 40001; TiDB write conflicts 9007, 8005, 8002, 8022
	Busy                 = session.Busy                 // SQLite SQLITE_BUSY / SQLITE_LOCKED ("database is locked")
)

// ConflictOf classifies err. It reads driver errors through small interfaces
// and their stable message prefixes instead of importing every driver:
// pgx's SQLState(), go-sql-driver/mysql's "Error 1213 (40001): ..." format,
// and SQLite's "database is locked" text. Context errors are NoConflict.
//
// The distributed engines report transaction conflicts their own way, and
// each of these means the transaction was rolled back and can be run again:
// CockroachDB's "restart transaction" errors carry SQLSTATE 40001 (its
// 40003 "result is ambiguous" may have committed and is not a conflict);
// TiDB's optimistic write conflicts are 9007 (TiKV) and 8005 (TiDB), 8002 a
// SELECT FOR UPDATE transaction that hit one, 8022 a commit that failed and
// was rolled back (its docs: "safe to retry"). TiDB's 8028 (schema changed)
// is not a lock conflict and is left to the caller.
func ConflictOf(err error) Conflict { return session.ConflictOf(err) }
