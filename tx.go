package slotted

import (
	"context"

	"gorm.io/gorm"
)

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
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	base := db.Session(&gorm.Session{NewDB: true, Context: ctx, SkipDefaultTransaction: true})
	return p.withRetry(ctx, false, func() error {
		if db.Dialector.Name() != "sqlite" {
			return base.Transaction(fn)
		}
		return base.Connection(func(conn *gorm.DB) (err error) {
			if err := conn.Exec("BEGIN IMMEDIATE").Error; err != nil {
				return err
			}
			defer func() {
				if r := recover(); r != nil {
					conn.Exec("ROLLBACK")
					panic(r)
				}
				if err != nil {
					conn.Exec("ROLLBACK")
					return
				}
				err = conn.Exec("COMMIT").Error
			}()
			return fn(conn.Session(&gorm.Session{NewDB: true})) // a chainable root on the pinned connection
		})
	})
}
