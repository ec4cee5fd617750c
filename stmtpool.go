package slotted

import (
	"context"
	"database/sql"
	"sync"
)

// No lock is held across PrepareContext: a prepare is a network round trip,
// and callers queued behind one would wait for its context instead of their
// own (a stalled server kept callers with 300 ms deadlines for 4.9 s). Callers
// that miss the cache together each prepare under their own context; the
// first statement stored wins and the others close theirs. That costs a few
// redundant prepares once per statement and pool, never a wait.

// stmtPool runs the plugin's own statements (the upsert and the sum: a fixed,
// tiny set) as prepared statements on one *sql.DB; database/sql prepares each
// *sql.Stmt once per connection. Unlike gorm.NewPreparedStmtDB it starts no
// goroutine, and it leaves the user's DB and statement cache alone.
type stmtPool struct {
	*sql.DB
	stmts sync.Map // query -> *sql.Stmt
}

func (s *stmtPool) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
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

func (s *stmtPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := s.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (s *stmtPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (s *stmtPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, err := s.prepare(ctx, query); err == nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.DB.QueryRowContext(ctx, query, args...) // reports the prepare error through the Row
}
