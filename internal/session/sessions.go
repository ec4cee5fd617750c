package session

import (
	"context"
	"database/sql"
	"sync"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/errs"
)

// Sessions is the plugin's session factory: one per Plugin, set up at
// Initialize.
type Sessions struct {
	Dialect dialect.Dialect
	// Table is the counter table: dbresolver's per-table resolvers route by it.
	Table string
	// DisablePrepared: the plugin prepares nothing (Config.DisablePrepared).
	DisablePrepared bool
	// Own reports whether a query is one of the plugin's fixed statements, the
	// ones it prepares (KeepPrepared).
	Own   func(query string) bool
	Retry *Retrier

	prepared sync.Map // *sql.DB -> *StmtPool
}

// Pool returns the connection pool for the plugin's statements and whether it
// is the caller's transaction. On a plain *sql.DB statements are prepared by
// the plugin, so users need not turn on PrepareStmt (nor
// SkipDefaultTransaction) for their whole DB. Transactions, the user's own
// prepared pools and other plugins' pools are used as they are.
func (s *Sessions) Pool(db *gorm.DB) (gorm.ConnPool, bool) {
	cp := db.Statement.ConnPool
	switch cp := cp.(type) {
	case gorm.TxCommitter:
		return db.Statement.ConnPool, true
	case *sql.DB:
		if s.DisablePrepared {
			return cp, false
		}
		return s.StmtPool(cp), false
	case nil:
		return db.Config.ConnPool, false
	}
	return cp, false
}

// StmtPool returns the plugin's prepared-statement pool on sqlDB.
func (s *Sessions) StmtPool(sqlDB *sql.DB) *StmtPool {
	if sp, ok := s.prepared.Load(sqlDB); ok {
		return sp.(*StmtPool)
	}
	sp, _ := s.prepared.LoadOrStore(sqlDB, &StmtPool{DB: sqlDB})
	return sp.(*StmtPool)
}

// KeepPrepared (a Raw and Row callback, after dbresolver's) puts the plugin's
// own statements back on its prepared-statement pool. dbresolver replaces a
// statement's pool with the *sql.DB of the source or replica it picks, after
// the plugin chose its StmtPool: without this every increment under
// dbresolver is prepare, execute and close again on MySQL. Only the plugin's
// fixed statements are prepared, never the user's.
func (s *Sessions) KeepPrepared(db *gorm.DB) {
	sqlDB, ok := db.Statement.ConnPool.(*sql.DB)
	if !ok || s.DisablePrepared || s.Own == nil || !s.Own(db.Statement.SQL.String()) {
		return
	}
	db.Statement.ConnPool = s.StmtPool(sqlDB)
}

// Raw returns a fresh *gorm.DB for the plugin's raw statements: the caller's
// context, connection or transaction and routing, none of its Where/Model
// state.
func (s *Sessions) Raw(db *gorm.DB) *gorm.DB {
	pool, _ := s.Pool(db)
	tx := db.Session(&gorm.Session{NewDB: true, Initialized: true})
	tx.Statement.ConnPool = pool
	Inherit(tx.Statement, db.Statement, true)
	return tx
}

// WriteTx runs fn in a write transaction. Inside the caller's transaction fn
// joins it and nothing is retried. Otherwise fn gets a transaction of its own,
// retried as a whole on lock conflicts, so fn must compute everything it
// writes from what it reads inside the transaction.
//
// On SQLite the transaction is BEGIN IMMEDIATE: a deferred transaction that
// reads and then writes fails at once with "database is locked" when another
// connection wrote in between, whatever the busy timeout. On Galera each
// attempt first waits for the node to apply the cluster's writes;
// inside the caller's transaction it cannot, and reads what the caller's
// transaction sees.
func (s *Sessions) WriteTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	if db.DryRun {
		return errs.ErrDryRun
	}
	if InTx(db) {
		return fn(db.Session(&gorm.Session{NewDB: true}))
	}
	// Statements inside fn must not open gorm's default transaction of their
	// own. The transaction begins on the primary, with the caller's routing.
	ctx := Context(db)
	base := Primary(db, s.Table).Session(&gorm.Session{Context: ctx, SkipDefaultTransaction: true})
	// READ COMMITTED on InnoDB too: locking reads then take no gap locks, so
	// two rewrites of neighbouring new counters do not deadlock on inserts into
	// the same gap. Exactness never relied on them: only rows locked by the
	// transaction are summed and deleted.
	readCommitted := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	return s.Retry.Do(ctx, false, func(ctx context.Context) error {
		base := base.WithContext(ctx)
		switch {
		case s.Dialect.Galera:
			// Catch up with the cluster, then BEGIN on the same connection (the
			// server skips wsrep_sync_wait inside a transaction): the reads see
			// every write acknowledged anywhere before this attempt began.
			return GaleraTx(ctx, base, readCommitted, fn)
		case !s.Dialect.ImmediateTx:
			return OwnTx(ctx, base, readCommitted, fn) // COMMIT awaited only until ctx ends
		}
		return base.Connection(func(conn *gorm.DB) (err error) {
			conn = Pin(conn)
			if err := conn.Exec("BEGIN IMMEDIATE").Error; err != nil {
				return err
			}
			defer func() {
				switch r := recover(); {
				case r != nil:
					EndSQLite(conn, "ROLLBACK")
					panic(r)
				case err != nil:
					EndSQLite(conn, "ROLLBACK")
				default:
					if err = EndSQLite(conn, "COMMIT"); err != nil {
						EndSQLite(conn, "ROLLBACK") // a COMMIT refused with SQLITE_BUSY leaves the transaction open
					}
				}
			}()
			return fn(conn.Session(&gorm.Session{NewDB: true})) // a chainable root on the pinned connection
		})
	})
}
