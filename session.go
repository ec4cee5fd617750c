package slotted

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"maps"
	"strings"

	"gorm.io/gorm"
)

// The caller's *gorm.DB decides where the plugin's statements run: its
// context, its transaction (joined, never retried) or connection pool, and
// its dbresolver routing. Everything here derives the plugin's sessions from it.

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

// pool returns the connection pool for the plugin's statements and whether it
// is the caller's transaction. On a plain *sql.DB statements are prepared by
// the plugin, so users need not turn on PrepareStmt (nor
// SkipDefaultTransaction) for their whole DB. Transactions, the user's own
// prepared pools and other plugins' pools are used as they are.
func (p *Plugin) pool(db *gorm.DB) (gorm.ConnPool, bool) {
	cp := db.Statement.ConnPool
	switch cp := cp.(type) {
	case gorm.TxCommitter:
		return db.Statement.ConnPool, true
	case *sql.DB:
		if sp, ok := p.prepared.Load(cp); ok {
			return sp.(*stmtPool), false
		}
		sp, _ := p.prepared.LoadOrStore(cp, &stmtPool{DB: cp})
		return sp.(*stmtPool), false
	case nil:
		return db.Config.ConnPool, false
	}
	return cp, false
}

// inherit carries the caller's routing state into a statement the plugin
// builds from scratch: settings (dbresolver.Write/Read live there) and
// plugin-namespaced clauses (dbresolver.Use). With all set (raw SQL, where
// clauses do not change the statement) every clause is carried.
func inherit(dst, src *gorm.Statement, all bool) {
	src.Settings.Range(func(k, v any) bool {
		dst.Settings.Store(k, v)
		return true
	})
	if len(src.Clauses) == 0 {
		return
	}
	if all {
		dst.Clauses = maps.Clone(src.Clauses)
		return
	}
	for name, c := range src.Clauses {
		if strings.Contains(name, ":") {
			dst.Clauses[name] = c
		}
	}
}

// routed returns a fresh, chainable *gorm.DB for a statement the plugin builds
// with gorm's builders: the caller's context, connection or transaction and
// routing, none of its Where/Model state.
func routed(db *gorm.DB) *gorm.DB {
	tx := db.Session(&gorm.Session{NewDB: true, Initialized: true})
	inherit(tx.Statement, db.Statement, false)
	return tx
}

// session returns a fresh *gorm.DB for the plugin's raw statements: the
// caller's context, connection or transaction and routing, none of its
// Where/Model state.
func (p *Plugin) session(db *gorm.DB) *gorm.DB {
	pool, _ := p.pool(db)
	tx := db.Session(&gorm.Session{NewDB: true, Initialized: true})
	tx.Statement.ConnPool = pool
	inherit(tx.Statement, db.Statement, true)
	return tx
}

// writeTx runs fn in a write transaction. Inside the caller's transaction fn
// joins it and nothing is retried. Otherwise fn gets a transaction of its own,
// retried as a whole on lock conflicts, so fn must compute everything it
// writes from what it reads inside the transaction.
//
// On SQLite the transaction is BEGIN IMMEDIATE: a deferred transaction that
// reads and then writes fails at once with "database is locked" when another
// connection wrote in between, whatever the busy timeout. On Galera each
// attempt first waits for the node to apply the cluster's writes (galera.go);
// inside the caller's transaction it cannot, and reads what the caller's
// transaction sees.
func (p *Plugin) writeTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	if inTransaction(db) {
		return fn(db.Session(&gorm.Session{NewDB: true}))
	}
	// Statements inside fn must not open gorm's default transaction of their own.
	ctx := contextOf(db)
	base := db.Session(&gorm.Session{NewDB: true, Context: ctx, SkipDefaultTransaction: true})
	// READ COMMITTED on InnoDB too: locking reads then take no gap locks, so
	// two rewrites of neighbouring new counters do not deadlock on inserts into
	// the same gap. Exactness never relied on them: only rows locked by the
	// transaction are summed and deleted.
	readCommitted := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	return p.withRetry(ctx, false, func() error {
		switch {
		case p.dialect.galera:
			// Catch up with the cluster, then BEGIN on the same connection (the
			// server skips wsrep_sync_wait inside a transaction): the reads see
			// every write acknowledged anywhere before this attempt began.
			return base.Connection(func(conn *gorm.DB) error {
				if err := conn.Exec(causalWait).Error; err != nil {
					return err
				}
				return conn.Transaction(fn, readCommitted)
			})
		case !p.dialect.immediateTx:
			return base.Transaction(fn, readCommitted)
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
