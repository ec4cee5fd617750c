package slotted

import (
	"context"
	"database/sql"
	"maps"
	"strings"
	"sync"

	"gorm.io/gorm"
)

// stmtPool runs the plugin's own statements (the upsert and the sum: a fixed,
// tiny set) as prepared statements on one *sql.DB; database/sql prepares each
// *sql.Stmt once per connection. Unlike gorm.NewPreparedStmtDB it starts no
// goroutine, and it leaves the user's DB and statement cache alone.
type stmtPool struct {
	*sql.DB
	mu    sync.Mutex
	stmts sync.Map // query -> *sql.Stmt
}

func (s *stmtPool) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.stmts.Store(query, st)
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
