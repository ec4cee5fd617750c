package slotted

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"gorm.io/gorm"
)

// contextOf is the caller's context (db.WithContext), or Background.
func contextOf(db *gorm.DB) context.Context {
	if ctx := db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}

// inTransaction reports whether db runs inside the caller's transaction.
func inTransaction(db *gorm.DB) bool {
	_, ok := db.Statement.ConnPool.(gorm.TxCommitter)
	return ok
}

// writeTx runs fn in a write transaction. Inside the caller's transaction fn
// joins it and nothing is retried. Otherwise fn gets a transaction of its own,
// retried as a whole on lock conflicts, so fn must compute everything it
// writes from what it reads inside the transaction.
//
// On SQLite the transaction is BEGIN IMMEDIATE: a deferred transaction that
// reads and then writes fails at once with "database is locked" when another
// connection wrote in between, whatever the busy timeout.
func (p *Plugin) writeTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	if inTransaction(db) {
		return fn(db.Session(&gorm.Session{NewDB: true}))
	}
	// Statements inside fn must not open gorm's default transaction of their own.
	ctx := contextOf(db)
	base := db.Session(&gorm.Session{NewDB: true, Context: ctx, SkipDefaultTransaction: true})
	return p.withRetry(ctx, false, func() error {
		if db.Dialector.Name() != "sqlite" {
			// READ COMMITTED on InnoDB too: locking reads then take no gap locks,
			// so two rewrites of neighbouring new counters do not deadlock on
			// inserts into the same gap. Exactness never relied on them: only
			// rows locked by the transaction are summed and deleted.
			return base.Transaction(fn, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		}
		return base.Connection(func(conn *gorm.DB) (err error) {
			if err := conn.Exec("BEGIN IMMEDIATE").Error; err != nil {
				return err
			}
			defer func() {
				switch r := recover(); {
				case r != nil:
					endSQLite(conn, "ROLLBACK")
					panic(r)
				case err != nil:
					endSQLite(conn, "ROLLBACK")
				default:
					if err = endSQLite(conn, "COMMIT"); err != nil {
						endSQLite(conn, "ROLLBACK") // a COMMIT refused with SQLITE_BUSY leaves the transaction open
					}
				}
			}()
			return fn(conn.Session(&gorm.Session{NewDB: true})) // a chainable root on the pinned connection
		})
	})
}

// endSQLite ends the transaction on a pinned connection, even when the
// caller's context is already cancelled. If ROLLBACK fails too, the
// connection is discarded rather than returned to the pool mid-transaction.
func endSQLite(conn *gorm.DB, stmt string) error {
	err := conn.WithContext(context.WithoutCancel(conn.Statement.Context)).Exec(stmt).Error
	if err != nil && stmt == "ROLLBACK" {
		if c, ok := conn.Statement.ConnPool.(*sql.Conn); ok {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	return err
}
