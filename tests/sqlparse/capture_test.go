package sqlparse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Each statement is captured in up to three forms, all of which must parse:
const (
	// formLogged is what the gorm logger's Trace is given: values inlined by
	// the dialector (what users see in their logs, and what gorm's DryRun shows).
	formLogged = "logged"
	// formBound is db.Statement.SQL after the statement ran: the text sent to
	// the server, with ? placeholders for the bound values.
	formBound = "bound"
	// formWire is what the database/sql driver was handed, plus the
	// transaction control go-sql-driver/mysql sends itself for BeginTx, Commit
	// and Rollback. It catches anything that bypasses gorm's callbacks.
	formWire = "wire"
)

// captured is one statement seen while a scenario ran.
type captured struct {
	scenario, form, sql string
}

// capture records the statements of the scenario that is running. Outside a
// scenario (setup, fixtures) it records nothing.
type capture struct {
	mu       sync.Mutex
	scenario string
	stmts    []captured
}

func (c *capture) start(scenario string) {
	c.mu.Lock()
	c.scenario = scenario
	c.mu.Unlock()
}

func (c *capture) stop() { c.start("") }

func (c *capture) add(form, sql string) {
	if sql == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scenario != "" {
		c.stmts = append(c.stmts, captured{c.scenario, form, sql})
	}
}

func (c *capture) all() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.stmts...)
}

// capture is also the gorm logger of the test's connections.
func (c *capture) LogMode(logger.LogLevel) logger.Interface { return c }
func (c *capture) Info(context.Context, string, ...any)     {}
func (c *capture) Warn(context.Context, string, ...any)     {}
func (c *capture) Error(context.Context, string, ...any)    {}
func (c *capture) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	sql, _ := fc()
	c.add(formLogged, sql)
}

// register adds a callback at the end of every gorm processor that records
// the statement's SQL as it was sent, with its placeholders. The plugin's
// own statements run through the Raw and Row processors too.
func (c *capture) register(db *gorm.DB) error {
	record := func(db *gorm.DB) {
		if !db.DryRun { // rendered, not sent (the plugin renders its statements once at db.Use)
			c.add(formBound, db.Statement.SQL.String())
		}
	}
	cb := db.Callback()
	for _, r := range []interface {
		Register(string, func(*gorm.DB)) error
	}{
		cb.Create().After("*"), cb.Query().After("*"), cb.Update().After("*"),
		cb.Delete().After("*"), cb.Row().After("*"), cb.Raw().After("*"),
	} {
		if err := r.Register("sqlparse:capture", record); err != nil {
			return err
		}
	}
	return nil
}

// wireConnector wraps the MySQL driver's connector so that every query the
// driver is handed is recorded (formWire). It forwards every optional
// interface go-sql-driver/mysql implements, so database/sql behaves as it
// does without the wrapper.
type wireConnector struct {
	driver.Connector
	c *capture
}

func (w wireConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := w.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wireConn{Conn: conn, c: w.c}, nil
}

type wireConn struct {
	driver.Conn
	c *capture
}

var (
	_ driver.ConnBeginTx        = (*wireConn)(nil)
	_ driver.ConnPrepareContext = (*wireConn)(nil)
	_ driver.ExecerContext      = (*wireConn)(nil)
	_ driver.QueryerContext     = (*wireConn)(nil)
	_ driver.Pinger             = (*wireConn)(nil)
	_ driver.SessionResetter    = (*wireConn)(nil)
	_ driver.Validator          = (*wireConn)(nil)
	_ driver.NamedValueChecker  = (*wireConn)(nil)
)

func (w *wireConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	w.c.add(formWire, query)
	return w.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

// ExecContext and QueryContext record a query only when the driver runs it
// as text; with arguments go-sql-driver returns ErrSkip and database/sql
// prepares it instead (recorded by PrepareContext).
func (w *wireConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := w.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		w.c.add(formWire, query)
	}
	return res, err
}

func (w *wireConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := w.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		w.c.add(formWire, query)
	}
	return rows, err
}

// isolationLevels are the levels go-sql-driver/mysql names in the
// "SET TRANSACTION ISOLATION LEVEL ..." it sends before START TRANSACTION.
var isolationLevels = map[sql.IsolationLevel]string{
	sql.LevelReadUncommitted: "READ UNCOMMITTED",
	sql.LevelReadCommitted:   "READ COMMITTED",
	sql.LevelRepeatableRead:  "REPEATABLE READ",
	sql.LevelSerializable:    "SERIALIZABLE",
}

// BeginTx records the statements go-sql-driver/mysql sends for a transaction
// (connection.go: BeginTx and begin); it sends them itself, not through the
// connection's ExecContext.
func (w *wireConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := w.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if level, ok := isolationLevels[sql.IsolationLevel(opts.Isolation)]; ok {
		w.c.add(formWire, "SET TRANSACTION ISOLATION LEVEL "+level)
	}
	if opts.ReadOnly {
		w.c.add(formWire, "START TRANSACTION READ ONLY")
	} else {
		w.c.add(formWire, "START TRANSACTION")
	}
	return wireTx{Tx: tx, c: w.c}, nil
}

func (w *wireConn) Ping(ctx context.Context) error { return w.Conn.(driver.Pinger).Ping(ctx) }
func (w *wireConn) ResetSession(ctx context.Context) error {
	return w.Conn.(driver.SessionResetter).ResetSession(ctx)
}
func (w *wireConn) IsValid() bool { return w.Conn.(driver.Validator).IsValid() }
func (w *wireConn) CheckNamedValue(nv *driver.NamedValue) error {
	return w.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

type wireTx struct {
	driver.Tx
	c *capture
}

func (t wireTx) Commit() error {
	t.c.add(formWire, "COMMIT")
	return t.Tx.Commit()
}

func (t wireTx) Rollback() error {
	t.c.add(formWire, "ROLLBACK")
	return t.Tx.Rollback()
}
