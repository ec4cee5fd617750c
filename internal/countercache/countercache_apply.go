package countercache

import (
	"database/sql"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/write"

	"github.com/slotted-go/slotted/internal/meta"
)

// applyDeltas writes every parent's net change with one multi-row upsert (one
// statement per shape, see batch.go), its rows in key order (meta.CompareRefs) so
// that two statements never wait on each other's slot rows in opposite orders.
//
// Inside the caller's *sql.Tx on MySQL/MariaDB the upsert runs as a statement
// prepared once per connection (txPrepared): without it, go-sql-driver/mysql
// prepares, executes and closes it on every Create, one more round trip than
// the child's INSERT costs.
func (p *Caches) applyDeltas(db *gorm.DB, d deltas) error {
	if err := p.propagate(db, d); err != nil {
		return err
	}
	rows := make([]write.Row, 0, len(d))
	for k, n := range d {
		rows = append(rows, write.Row{Ref: meta.Ref{Type: k.c.counter.RecordType, ID: k.id}, Slots: k.c.counter.Slots, Delta: n})
	}
	rows, err := write.SumRows(rows) // one row per parent counter, in key order; errs.ErrOverflow
	if err != nil || len(rows) == 0 {
		return err
	}
	if err := p.upsertDeltas(db, rows); err != nil {
		return err
	}
	return p.touchParents(db, d)
}

// upsertDeltas runs writeDeltas, through session.TxPrepared when it can:
// only the plugin's fixed upserts pass through it (a bounded set of
// statements).
func (p *Caches) upsertDeltas(db *gorm.DB, rows []write.Row) error {
	if tx, ok := db.Statement.ConnPool.(*sql.Tx); ok && p.dialect.PreparedInTx && !p.cfg.DisablePrepared {
		if sqlDB, err := db.DB(); err == nil {
			db.Statement.ConnPool = session.TxPrepared{Tx: tx, Stmts: p.sessions.StmtPool(sqlDB)}
			defer func() { db.Statement.ConnPool = tx }()
		}
	}
	return p.writes.WriteDeltas(db, rows)
}
