package slotted

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"maps"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
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
		if p.cfg.DisablePrepared {
			return cp, false
		}
		return p.stmtPoolOf(cp), false
	case nil:
		return db.Config.ConnPool, false
	}
	return cp, false
}

// stmtPoolOf returns the plugin's prepared-statement pool on sqlDB.
func (p *Plugin) stmtPoolOf(sqlDB *sql.DB) *stmtPool {
	if sp, ok := p.prepared.Load(sqlDB); ok {
		return sp.(*stmtPool)
	}
	sp, _ := p.prepared.LoadOrStore(sqlDB, &stmtPool{DB: sqlDB})
	return sp.(*stmtPool)
}

// keepPrepared (a Raw and Row callback, after dbresolver's) puts the plugin's
// own statements back on its prepared-statement pool. dbresolver replaces a
// statement's pool with the *sql.DB of the source or replica it picks, after
// the plugin chose its stmtPool: without this every increment under
// dbresolver is prepare, execute and close again on MySQL. Only the plugin's
// fixed statements are prepared, never the user's.
func (p *Plugin) keepPrepared(db *gorm.DB) {
	sqlDB, ok := db.Statement.ConnPool.(*sql.DB)
	if !ok || p.cfg.DisablePrepared || !p.ownStatement(db.Statement.SQL.String()) {
		return
	}
	db.Statement.ConnPool = p.stmtPoolOf(sqlDB)
}

// ownStatement reports whether query is one of the plugin's fixed statements,
// the ones it prepares (the upserts of every shape, so the statement of one
// write and its outcome marker too, and the sum), in the form the driver gets. A new fixed statement
// belongs here too.
func (p *Plugin) ownStatement(query string) bool {
	return query == p.sql.upsert || query == p.sumSQL() || p.batchStatement(query)
}

// sumSQL is the sum as db.Raw hands it to the driver ($1 on PostgreSQL),
// rendered on first use, once Initialize has settled p.sql.
func (p *Plugin) sumSQL() string {
	p.sumOnce.Do(func() {
		tx := p.db.Session(&gorm.Session{NewDB: true, DryRun: true, Logger: logger.Discard}).
			Raw(p.sql.sum, args(p.sql.sumArgs, "", "", 0, 0)...)
		p.sumFinal = tx.Statement.SQL.String()
	})
	return p.sumFinal
}

// dbresolver (gorm.io/plugin/dbresolver), which the library does not import,
// routes each statement by settings on it: dbresolver.Write stores
// resolverWrite (and drops resolverRead), and its callback, registered under
// resolverCallback on every chain, picks the pool: a source for writes, for
// locking reads and under Write, else a replica. dbresolver.Write itself runs
// that callback on the spot, so that a transaction begun from the statement
// starts on a source; primary does the same. A plugin-namespaced clause
// (dbresolver.Use) picks which resolver; inherit carries it.
const (
	resolverWrite    = "gorm:db_resolver:write"
	resolverRead     = "gorm:db_resolver:read"
	resolverCallback = "gorm:db_resolver"
)

// primary returns a fresh, chainable *gorm.DB like routed's whose statements
// run on the primary: what dbresolver.Write does, for the caller's resolver
// (dbresolver.Use, or the one dbresolver configured for table). Every read
// that decides a write or a delete, and every write transaction, starts here.
// Inside the caller's transaction it is that transaction; without dbresolver
// it is the caller's pool.
func primary(db *gorm.DB, table string) *gorm.DB {
	tx := routed(db)
	tx.Statement.Settings.Delete(resolverRead)
	tx.Statement.Settings.Store(resolverWrite, struct{}{})
	if fc := tx.Callback().Query().Get(resolverCallback); fc != nil && !inTransaction(tx) {
		tx.Statement.Table = table // dbresolver's per-table resolvers go by the statement's table
		fc(tx)
		tx.Statement.Table = ""
	}
	return tx.Session(&gorm.Session{}) // each chain gets a copy: routing, no Where/Model state
}

// pinnedPool keeps statements on the pool or connection already chosen for
// them: dbresolver re-resolves every statement whose pool is not a
// transaction, so it would move the statements of a connection pinned for
// BEGIN IMMEDIATE (or a fill meant for the replica its records came from) to
// a pool of its choosing. Commit and Rollback make it look like a transaction
// to dbresolver; nothing calls them.
type pinnedPool struct{ gorm.ConnPool }

var errPinned = errors.New("slotted: a pinned connection is not a transaction")

func (pinnedPool) Commit() error   { return errPinned }
func (pinnedPool) Rollback() error { return errPinned }

// pin keeps conn's statements on its current pool or connection.
func pin(conn *gorm.DB) *gorm.DB {
	if _, ok := conn.Statement.ConnPool.(gorm.TxCommitter); !ok {
		conn.Statement.ConnPool = pinnedPool{conn.Statement.ConnPool}
	}
	return conn
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
	if db.DryRun {
		return ErrDryRun
	}
	if inTransaction(db) {
		return fn(db.Session(&gorm.Session{NewDB: true}))
	}
	// Statements inside fn must not open gorm's default transaction of their
	// own. The transaction begins on the primary, with the caller's routing.
	ctx := contextOf(db)
	base := primary(db, p.cfg.Table).Session(&gorm.Session{Context: ctx, SkipDefaultTransaction: true})
	// READ COMMITTED on InnoDB too: locking reads then take no gap locks, so
	// two rewrites of neighbouring new counters do not deadlock on inserts into
	// the same gap. Exactness never relied on them: only rows locked by the
	// transaction are summed and deleted.
	readCommitted := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	return p.withRetry(ctx, false, func(ctx context.Context) error {
		base := base.WithContext(ctx)
		switch {
		case p.dialect.galera:
			// Catch up with the cluster, then BEGIN on the same connection (the
			// server skips wsrep_sync_wait inside a transaction): the reads see
			// every write acknowledged anywhere before this attempt began.
			return galeraTx(ctx, base, readCommitted, fn)
		case !p.dialect.immediateTx:
			return ownTx(ctx, base, readCommitted, fn) // COMMIT awaited only until ctx ends (commit.go)
		}
		return base.Connection(func(conn *gorm.DB) (err error) {
			conn = pin(conn)
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
		cp := conn.Statement.ConnPool
		if pinned, ok := cp.(pinnedPool); ok {
			cp = pinned.ConnPool
		}
		if c, ok := cp.(*sql.Conn); ok {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	return err
}
