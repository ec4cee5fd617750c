package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// Dialects, as gorm's Dialector.Name() reports them.
const (
	dialectMySQL    = "mysql"
	dialectPostgres = "postgres"
	dialectSQLite   = "sqlite"
)

// driverNames maps what -driver accepts to a dialect.
var driverNames = map[string]string{
	"mysql": dialectMySQL, "mariadb": dialectMySQL,
	"postgres": dialectPostgres, "postgresql": dialectPostgres, "pg": dialectPostgres,
	"sqlite": dialectSQLite, "sqlite3": dialectSQLite,
}

// schemes maps a DSN's URL scheme to its dialect. "file:" is SQLite's URI form.
var schemes = []struct{ prefix, dialect string }{
	{"mysql://", dialectMySQL}, {"mariadb://", dialectMySQL},
	{"postgres://", dialectPostgres}, {"postgresql://", dialectPostgres},
	{"sqlite://", dialectSQLite}, {"sqlite3://", dialectSQLite}, {"file:", dialectSQLite},
}

// dsnForms is the help text on the forms each driver takes.
const dsnForms = `MariaDB/MySQL: 'user:pass@tcp(host:3306)/db', 'user@unix(/run/mysqld/mysqld.sock)/db', 'user@/db' ` +
	`or 'mysql://user:pass@host:3306/db[?socket=/path]'; PostgreSQL: 'host=/var/run/postgresql user=u dbname=db' ` +
	`(libpq key=value) or 'postgres://u:pass@host:5432/db'; SQLite: a file path, 'sqlite://path' or 'file:path?...'`

// target is a database to sweep: how to open fresh connection pools to it.
type target struct {
	dialect string
	dsn     string // as the driver wants it
	cleanup func() // removes a temporary SQLite directory
}

// newTarget resolves -driver and -dsn to a database. The DSN is checked by
// the driver's own parser (go-sql-driver/mysql's ParseDSN, pgx's ParseConfig)
// before anything is opened. Without -driver the dialect comes from the DSN's
// scheme or, failing that, from its form, and only when exactly one database
// reads it: anything else is an error naming the forms, never a silent guess.
// An empty DSN (with no driver or -driver sqlite) is a temporary SQLite file,
// removed by cleanup.
func newTarget(driver, dsn string) (*target, error) {
	dsn = strings.TrimSpace(dsn)
	dialect := ""
	if driver != "" {
		d, ok := driverNames[strings.ToLower(driver)]
		if !ok {
			return nil, fmt.Errorf("%w: -driver %q: want mysql, postgres or sqlite", errUsage, driver)
		}
		dialect = d
	}
	if scheme, d := schemeOf(dsn); d != "" {
		if dialect != "" && dialect != d {
			return nil, fmt.Errorf("%w: -driver %s, but -dsn starts with %s", errUsage, driver, scheme)
		}
		dialect = d
	}
	if dialect == "" {
		var err error
		if dialect, err = detect(dsn); err != nil {
			return nil, err
		}
	}
	t := &target{dialect: dialect, cleanup: func() {}}
	var err error
	switch dialect {
	case dialectMySQL:
		t.dsn, err = mysqlDSN(dsn)
	case dialectPostgres:
		t.dsn, err = postgresDSN(dsn)
	default:
		t.dsn, t.cleanup, err = sqliteTarget(dsn)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// schemeOf returns the DSN's scheme prefix and its dialect, or "", "".
func schemeOf(dsn string) (string, string) {
	lower := strings.ToLower(dsn)
	for _, s := range schemes {
		if strings.HasPrefix(lower, s.prefix) {
			return s.prefix, s.dialect
		}
	}
	return "", ""
}

// libpqKey matches the first keyword of a libpq key=value DSN.
var libpqKey = regexp.MustCompile(`^(host|hostaddr|port|dbname|user|password|passfile|sslmode|sslrootcert|sslcert|sslkey|` +
	`connect_timeout|application_name|options|service|target_session_attrs|client_encoding)\s*=`)

// detect tells the database from a DSN without a scheme. Each reading is
// checked: libpq key=value (PostgreSQL), go-sql-driver's
// [user[:pass]@][net(addr)]/db with a user or an address (MySQL), and an
// existing file or a name ending in a SQLite extension (SQLite).
func detect(dsn string) (string, error) {
	if dsn == "" {
		return dialectSQLite, nil
	}
	var found []string
	if libpqKey.MatchString(strings.ToLower(dsn)) {
		found = append(found, dialectPostgres)
	}
	if mysqlShaped(dsn) {
		found = append(found, dialectMySQL)
	}
	if sqliteShaped(dsn) {
		found = append(found, dialectSQLite)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%w: cannot tell which database -dsn %q names; give -driver mysql|postgres|sqlite or a scheme. Forms: %s",
			errUsage, redact(dsn), dsnForms)
	}
	return "", fmt.Errorf("%w: -dsn %q is ambiguous: it reads as %s; give -driver", errUsage, redact(dsn), strings.Join(found, " and as "))
}

// mysqlShaped: go-sql-driver parses it and it names a user or an address, so
// a relative path like "dir/app.db" does not count.
func mysqlShaped(dsn string) bool {
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 || !strings.ContainsAny(dsn[:slash], "@)") {
		return false
	}
	cfg, err := gomysql.ParseDSN(dsn)
	return err == nil && knownNet(cfg.Net)
}

var sqliteExt = regexp.MustCompile(`(?i)\.(db|db3|sqlite|sqlite3|s3db|sl3)$`)

// sqliteShaped: an existing file, a name with a SQLite file extension, or an
// in-memory database (which sqliteTarget then refuses with its reason).
func sqliteShaped(dsn string) bool {
	if strings.Contains(dsn, ":memory:") {
		return true
	}
	path, _, _ := strings.Cut(dsn, "?")
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return true
	}
	return sqliteExt.MatchString(path)
}

func knownNet(n string) bool {
	switch n {
	case "tcp", "tcp4", "tcp6", "unix":
		return true
	}
	return false
}

// mysqlDSN returns the DSN in go-sql-driver's form, checked by its ParseDSN.
// mysql:// (or mariadb://) may prefix either that form or a URL,
// mysql://user:pass@host:port/db?params, where ?socket=/path means a unix socket.
func mysqlDSN(dsn string) (string, error) {
	if scheme, _ := schemeOf(dsn); scheme != "" {
		rest := dsn[len(scheme):]
		dsn = rest
		if u, err := url.Parse("mysql://" + rest); err == nil && u.Host != "" && !strings.Contains(rest, "(") {
			dsn = mysqlFromURL(u)
		}
	}
	if dsn == "" {
		return "", fmt.Errorf("%w: -dsn is empty; MariaDB/MySQL forms: %s", errUsage, dsnForms)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("%w: -dsn %q is not a MariaDB/MySQL DSN: %v. Forms: %s", errUsage, redact(dsn), err, dsnForms)
	}
	if !knownNet(cfg.Net) {
		return "", fmt.Errorf("%w: -dsn %q: network %q is not tcp or unix", errUsage, redact(dsn), cfg.Net)
	}
	if cfg.DBName == "" {
		return "", fmt.Errorf("%w: -dsn %q names no database: slotbench creates its scratch tables in one (…/dbname)", errUsage, redact(dsn))
	}
	return dsn, nil
}

// mysqlFromURL turns mysql://user:pass@host:port/db?params into
// user:pass@tcp(host:port)/db?params (unix(path) with ?socket=path).
func mysqlFromURL(u *url.URL) string {
	cfg := gomysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.Net, cfg.Addr = "tcp", u.Host
	q := u.Query()
	if sock := q.Get("socket"); sock != "" {
		cfg.Net, cfg.Addr = "unix", sock
		q.Del("socket")
	} else if u.Port() == "" {
		cfg.Addr = u.Host + ":3306"
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	out := cfg.FormatDSN()
	if len(q) > 0 {
		sep := "?"
		if strings.Contains(out, "?") {
			sep = "&"
		}
		out += sep + q.Encode()
	}
	return out
}

// postgresDSN checks a libpq key=value string or a postgres:// URL with pgx's
// own parser, the one gorm's driver uses; both pass through unchanged.
// Unset fields take libpq's defaults (PGHOST etc., then the unix socket in
// /var/run/postgresql, /private/tmp or /tmp).
func postgresDSN(dsn string) (string, error) {
	if dsn == "" {
		return "", fmt.Errorf("%w: -dsn is empty; PostgreSQL forms: %s", errUsage, dsnForms)
	}
	if _, err := pgx.ParseConfig(dsn); err != nil {
		// pgx's message names the DSN with its password redacted.
		return "", fmt.Errorf("%w: not a PostgreSQL DSN: %v. Forms: %s", errUsage, err, dsnForms)
	}
	return dsn, nil
}

// sqliteTarget returns the SQLite DSN for a path, sqlite://path or a file:
// URI; empty means a temporary file, removed by the returned cleanup.
func sqliteTarget(dsn string) (string, func(), error) {
	if dsn == "" {
		dir, err := os.MkdirTemp("", "slotbench-")
		if err != nil {
			return "", nil, err
		}
		return sqliteDSN("file:" + filepath.Join(dir, "slotbench.db")), func() { _ = os.RemoveAll(dir) }, nil
	}
	if scheme, _ := schemeOf(dsn); scheme != "" && scheme != "file:" {
		dsn = dsn[len(scheme):]
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	switch {
	case strings.Contains(dsn, ":memory:") || strings.Contains(dsn, "mode=memory"):
		// Every pooled connection would get its own empty database.
		return "", nil, fmt.Errorf("%w: an in-memory SQLite database is private to one connection; give a file path", errUsage)
	case path == "":
		return "", nil, fmt.Errorf("%w: -dsn %q names no SQLite file", errUsage, dsn)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return "", nil, fmt.Errorf("%w: -dsn %q: directory %s does not exist", errUsage, dsn, filepath.Dir(path))
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return "", nil, fmt.Errorf("%w: -dsn %q is a directory, not a SQLite file", errUsage, dsn)
	}
	return sqliteDSN(dsn), func() {}, nil
}

// redact hides a password in a DSN for messages: user:secret@ -> user:***@,
// password=secret -> password=***.
func redact(dsn string) string {
	head, _, _ := strings.Cut(dsn, "?")
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		start := 0
		if i := strings.Index(head[:at], "://"); i >= 0 {
			start = i + len("://")
		}
		if colon := strings.IndexByte(dsn[start:at], ':'); colon >= 0 {
			dsn = dsn[:start+colon+1] + "***" + dsn[at:]
		}
	}
	return passwordKV.ReplaceAllString(dsn, "${1}***")
}

var passwordKV = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// dialector returns a new gorm.Dialector: dialectors keep per-connection
// state, so each gorm.Open gets its own (as it gets its own gorm.Config).
func (t *target) dialector() gorm.Dialector {
	switch t.dialect {
	case dialectMySQL:
		return mysql.Open(t.dsn)
	case dialectPostgres:
		return postgres.Open(t.dsn)
	}
	return openSQLite(t.dsn)
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
