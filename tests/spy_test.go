package tests

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	gmysql "gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// A spy is a connection pool on a real database whose driver connections
// record what runs on them, so a test can tell which of several pools
// (dbresolver's source and replicas) ran a statement, and whether it ran as
// a prepared statement. It changes nothing the driver does.

type spyEvent struct {
	kind string // "prepare", "stmt" (through a prepared statement) or "direct"
	sql  string
}

type spyLog struct {
	name   string
	mu     sync.Mutex
	events []spyEvent
}

func (l *spyLog) add(kind, query string) {
	l.mu.Lock()
	l.events = append(l.events, spyEvent{kind, query})
	l.mu.Unlock()
}

func (l *spyLog) reset() {
	l.mu.Lock()
	l.events = nil
	l.mu.Unlock()
}

// count returns how many events of kind ("" for any) ran SQL containing every fragment.
func (l *spyLog) count(kind string, fragments ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if kind != "" && e.kind != kind {
			continue
		}
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(e.sql, f)
		}
		if all {
			n++
		}
	}
	return n
}

// statements lists the SQL of every event, for failure messages.
func (l *spyLog) statements() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.events))
	for i, e := range l.events {
		out[i] = e.kind + ": " + e.sql
	}
	return out
}

type spyConnector struct {
	inner driver.Connector
	log   *spyLog
}

func (c *spyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &spyConn{conn, c.log}, nil
}

func (c *spyConnector) Driver() driver.Driver { return c.inner.Driver() }

type spyConn struct {
	driver.Conn
	log *spyLog
}

func (c *spyConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *spyConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	c.log.add("prepare", query)
	return &spyStmt{st, c.log, query}, nil
}

// The three drivers implement the context interfaces; a spy needs nothing older.
var errOldDriver = errors.New("spy: the driver lacks a context method")

func (c *spyConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return nil, errOldDriver
}

func (c *spyConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	res, err := e.ExecContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		c.log.add("direct", query)
	}
	return res, err
}

func (c *spyConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := q.QueryContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		c.log.add("direct", query)
	}
	return rows, err
}

func (c *spyConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *spyConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *spyConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *spyConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type spyStmt struct {
	driver.Stmt
	log   *spyLog
	query string
}

func (s *spyStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.log.add("stmt", s.query)
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	return nil, errOldDriver
}

func (s *spyStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.log.add("stmt", s.query)
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	return nil, errOldDriver
}

func (s *spyStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// dsnConnector opens SQLite connections from a DSN.
type dsnConnector struct {
	dsn string
	drv driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

// where a spied pool connects, on the test's database server.
type spyTarget int

const (
	sameDatabase spyTarget = iota // the test's own database (SQLite: its file)
	// emptyDatabase is a namespace without the test's tables, on the same
	// server: MySQL's information_schema (it can neither have nor get them),
	// the PostgreSQL schema slotted_replica (emptied here; search_path), a
	// second SQLite file.
	emptyDatabase
)

// replicaSchema is the PostgreSQL schema, in the test's own database, that
// stands in for a replica's separate database.
const replicaSchema = "slotted_replica"

// spied returns a dialector for a spied pool on the test's server, and its
// log. Use it with gorm.Open or as a dbresolver source or replica.
func spied(t *testing.T, name, label string, target spyTarget) (gorm.Dialector, *spyLog) {
	t.Helper()
	log := &spyLog{name: label}
	var (
		sqlDB *sql.DB
		d     gorm.Dialector
	)
	switch name {
	case dbMySQL:
		cfg, err := mysql.ParseDSN(os.Getenv("SLOTTED_MYSQL_DSN"))
		require.NoError(t, err)
		if target == emptyDatabase {
			cfg.DBName = "information_schema"
		}
		c, err := mysql.NewConnector(cfg)
		require.NoError(t, err)
		sqlDB = sql.OpenDB(&spyConnector{c, log})
		d = gmysql.New(gmysql.Config{Conn: sqlDB})
	case dbPostgres:
		cfg, err := pgx.ParseConfig(os.Getenv("SLOTTED_POSTGRES_DSN"))
		require.NoError(t, err)
		if target == emptyDatabase {
			cfg.RuntimeParams["search_path"] = replicaSchema
		}
		sqlDB = sql.OpenDB(&spyConnector{stdlib.GetConnector(*cfg), log})
		d = postgres.New(postgres.Config{Conn: sqlDB})
	default:
		dsn := ""
		if target == emptyDatabase {
			dsn = sqliteDSN(filepath.Join(t.TempDir(), "replica.db"), 10000, true)
		} else {
			v, ok := sqliteDSNs.Load(t)
			require.True(t, ok, "openRaw was called for this test")
			dsn = v.(string)
		}
		sqlDB = sql.OpenDB(&spyConnector{dsnConnector{dsn, sqliteSQLDriver()}, log})
		d = sqliteOn(sqlDB)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	return d, log
}

// emptyReplicaSchema (re)creates PostgreSQL's stand-in replica namespace without tables.
func emptyReplicaSchema(t *testing.T, db *gorm.DB) {
	t.Helper()
	if dialect(db) != dbPostgres {
		return
	}
	require.NoError(t, db.Exec("DROP SCHEMA IF EXISTS "+replicaSchema+" CASCADE").Error)
	require.NoError(t, db.Exec("CREATE SCHEMA "+replicaSchema).Error)
	t.Cleanup(func() { _ = db.Exec("DROP SCHEMA IF EXISTS " + replicaSchema + " CASCADE").Error })
}
