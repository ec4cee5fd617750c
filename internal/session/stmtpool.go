package session

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// No lock is held across PrepareContext: a prepare is a network round trip,
// and callers queued behind one would wait for its context instead of their
// own (a stalled server kept callers with 300 ms deadlines for 4.9 s). Callers
// that miss the cache together each prepare under their own context; the
// first statement stored wins and the others close theirs. That costs a few
// redundant prepares once per statement and pool, never a wait.

// StmtPool runs the plugin's own statements (the upsert and the sum: a fixed,
// tiny set) as prepared statements on one *sql.DB; database/sql prepares each
// *sql.Stmt once per connection. Unlike gorm.NewPreparedStmtDB it starts no
// goroutine, and it leaves the user's DB and statement cache alone.
type StmtPool struct {
	*sql.DB
	stmts sync.Map // query -> *sql.Stmt
}

func (s *StmtPool) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, raced := s.stmts.LoadOrStore(query, st); raced {
		_ = st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

func (s *StmtPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := s.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (s *StmtPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (s *StmtPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, err := s.prepare(ctx, query); err == nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.DB.QueryRowContext(ctx, query, args...) // reports the prepare error through the Row
}

// TxPrepared runs the plugin's upserts in the caller's transaction as
// statements prepared on its connection once (database/sql keeps a *sql.Stmt's
// per-connection statements, and Tx.StmtContext reuses the one of the
// transaction's connection). The *sql.Stmt is never prepared while a
// transaction waits: that takes a second connection from the pool, which 64
// transactions holding all of it would wait for each other to release. A
// statement not prepared yet runs unprepared and is prepared in the background.
type TxPrepared struct {
	*sql.Tx
	Stmts *StmtPool
}

func (t TxPrepared) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.Stmts.stmts.Load(query); ok {
		return t.Tx.StmtContext(ctx, st.(*sql.Stmt)).ExecContext(ctx, args...)
	}
	prepareLater(t.Stmts, query)
	return t.Tx.ExecContext(ctx, query, args...)
}

// preparing holds the statements being prepared in the background, per pool.
var preparing sync.Map // struct{*StmtPool; string} -> struct{}

func prepareLater(sp *StmtPool, query string) {
	key := struct {
		sp    *StmtPool
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
