package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// Dialects, as gorm's Dialector.Name() reports them.
const (
	dialectMySQL    = "mysql"
	dialectPostgres = "postgres"
	dialectSQLite   = "sqlite"
)

// dialectOf tells the database from the DSN's shape. URL schemes are checked
// first, so a PostgreSQL URL whose query mentions "@tcp(" is still PostgreSQL.
func dialectOf(dsn string) string {
	lower := strings.ToLower(strings.TrimSpace(dsn))
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return dialectPostgres
	case strings.HasPrefix(lower, "mysql://"), strings.Contains(dsn, "@tcp("):
		return dialectMySQL
	case strings.Contains(lower, "host="):
		return dialectPostgres
	}
	return dialectSQLite
}

// target is a database to sweep: how to open fresh connection pools to it.
type target struct {
	dialect string
	dsn     string // as the driver wants it
	// appName is the application_name our PostgreSQL sessions carry, so the
	// lock sampler counts only our own backends; "" when the DSN set one.
	appName string
	cleanup func() // removes a temporary SQLite directory
}

// newTarget normalises dsn for its driver. An empty dsn means a temporary
// SQLite file, removed by cleanup. tag names our PostgreSQL sessions.
func newTarget(dsn, tag string) (*target, error) {
	t := &target{dialect: dialectOf(dsn), dsn: strings.TrimSpace(dsn), cleanup: func() {}}
	switch t.dialect {
	case dialectMySQL:
		if strings.HasPrefix(strings.ToLower(t.dsn), "mysql://") {
			d, err := mysqlURLToDSN(t.dsn)
			if err != nil {
				return nil, err
			}
			t.dsn = d
		}
	case dialectPostgres:
		t.dsn, t.appName = withAppName(t.dsn, tag)
	case dialectSQLite:
		if strings.Contains(t.dsn, ":memory:") || strings.Contains(t.dsn, "mode=memory") {
			// Every pooled connection would get its own empty database.
			return nil, fmt.Errorf("%w: an in-memory SQLite database is private to one connection; give a file path", errUsage)
		}
		if t.dsn == "" {
			dir, err := os.MkdirTemp("", "slotbench-")
			if err != nil {
				return nil, err
			}
			t.cleanup = func() { _ = os.RemoveAll(dir) }
			t.dsn = "file:" + filepath.Join(dir, "slotbench.db")
		}
		t.dsn = sqliteDSN(t.dsn)
	}
	return t, nil
}

// dialector returns a new gorm.Dialector: dialectors keep per-connection
// state, so each gorm.Open gets its own (as it gets its own gorm.Config).
func (t *target) dialector() gorm.Dialector {
	switch t.dialect {
	case dialectMySQL:
		return mysql.Open(t.dsn)
	case dialectPostgres:
		return postgres.Open(t.dsn)
	}
	return sqlite.Open(t.dsn)
}

// sqliteDSN adds a busy timeout and WAL unless the DSN sets them: without a
// busy timeout concurrent writers fail at once with SQLITE_BUSY instead of
// queueing for SQLite's single write lock.
func sqliteDSN(dsn string) string {
	for _, param := range []string{"_busy_timeout=10000", "_journal_mode=WAL"} {
		name, _, _ := strings.Cut(param, "=")
		if strings.Contains(dsn, name+"=") {
			continue
		}
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + param
	}
	return dsn
}

// mysqlURLToDSN turns mysql://user:pass@host:port/db?params into
// go-sql-driver's user:pass@tcp(host:port)/db?params.
func mysqlURLToDSN(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: -dsn: %v", errUsage, err)
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1:3306"
	} else if u.Port() == "" {
		host += ":3306"
	}
	var b strings.Builder
	if u.User != nil {
		b.WriteString(u.User.Username())
		if p, ok := u.User.Password(); ok {
			b.WriteString(":" + p)
		}
		b.WriteString("@")
	}
	fmt.Fprintf(&b, "tcp(%s)/%s", host, strings.TrimPrefix(u.Path, "/"))
	if u.RawQuery != "" {
		b.WriteString("?" + u.RawQuery)
	}
	return b.String(), nil
}

// withAppName sets application_name on a PostgreSQL DSN unless it has one,
// and returns the name set ("" if the DSN had its own).
func withAppName(dsn, name string) (string, string) {
	if strings.Contains(dsn, "application_name=") {
		return dsn, ""
	}
	lower := strings.ToLower(dsn)
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn, "" // the driver will report it
		}
		q := u.Query()
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		return u.String(), name
	}
	return dsn + " application_name=" + name, name
}
