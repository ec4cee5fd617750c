package slotted

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"gorm.io/gorm"
)

// applyDeltas writes every parent's net change with one multi-row upsert (one
// statement per shape, see batch.go), its rows in key order (compareRefs) so
// that two statements never wait on each other's slot rows in opposite orders.
//
// Inside the caller's *sql.Tx on MySQL/MariaDB the upsert runs as a statement
// prepared once per connection (txPrepared): without it, go-sql-driver/mysql
// prepares, executes and closes it on every Create, one more round trip than
// the child's INSERT costs.
func (p *Plugin) applyDeltas(db *gorm.DB, d deltas) error {
	if err := p.propagate(db, d); err != nil {
		return err
	}
	rows := make([]batchRow, 0, len(d))
	for k, n := range d {
		rows = append(rows, batchRow{ref: Ref{Type: k.c.counter.recordType, ID: k.id}, slots: k.c.counter.slots, delta: n})
	}
	rows, err := sumRows(rows) // one row per parent counter, in key order; ErrOverflow
	if err != nil || len(rows) == 0 {
		return err
	}
	if err := p.upsertDeltas(db, rows); err != nil {
		return err
	}
	return p.touchParents(db, d)
}

// upsertDeltas runs writeDeltas, through txPrepared when it can: only the
// plugin's fixed upserts pass through it (a bounded set of statements).
func (p *Plugin) upsertDeltas(db *gorm.DB, rows []batchRow) error {
	if tx, ok := db.Statement.ConnPool.(*sql.Tx); ok && p.dialect.name == "mysql" && !p.cfg.DisablePrepared {
		if sqlDB, err := db.DB(); err == nil {
			db.Statement.ConnPool = txPrepared{Tx: tx, p: p, stmts: p.stmtPoolOf(sqlDB)}
			defer func() { db.Statement.ConnPool = tx }()
		}
	}
	return p.writeDeltas(db, rows)
}

// txPrepared runs the plugin's upserts in the caller's transaction as
// statements prepared on its connection once (database/sql keeps a *sql.Stmt's
// per-connection statements, and Tx.StmtContext reuses the one of the
// transaction's connection). The *sql.Stmt is never prepared while a
// transaction waits: that takes a second connection from the pool, which 64
// transactions holding all of it would wait for each other to release. A
// statement not prepared yet runs unprepared and is prepared in the background.
type txPrepared struct {
	*sql.Tx
	p     *Plugin
	stmts *stmtPool
}

func (t txPrepared) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.stmts.stmts.Load(query); ok {
		return t.Tx.StmtContext(ctx, st.(*sql.Stmt)).ExecContext(ctx, args...)
	}
	t.p.prepareLater(t.stmts, query)
	return t.Tx.ExecContext(ctx, query, args...)
}

// preparing holds the statements being prepared in the background, per pool.
var preparing sync.Map // struct{*stmtPool; string} -> struct{}

func (p *Plugin) prepareLater(sp *stmtPool, query string) {
	key := struct {
		sp    *stmtPool
		query string
	}{sp, query}
	if _, busy := preparing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	go func() {
		defer preparing.Delete(key)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = sp.prepare(ctx, query) // a failure leaves the statement unprepared: the next call tries again
	}()
}
