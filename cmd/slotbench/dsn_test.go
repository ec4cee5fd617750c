package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "counters") // no extension, but there
	require.NoError(t, os.WriteFile(existing, nil, 0o644))
	for dsn, want := range map[string]string{
		"root@tcp(127.0.0.1:3306)/slotted_test?parseTime=true": dialectMySQL,
		"root@unix(/run/mysqld/mysqld.sock)/app":               dialectMySQL,
		"root@/app":                                            dialectMySQL,
		"user:p@ss/w0rd@tcp(db:3306)/app":                      dialectMySQL,
		"tcp(db:3306)/app":                                     dialectMySQL,
		"user=postgres dbname=app":                             dialectPostgres,
		"host=/var/run/postgresql dbname=app":                  dialectPostgres,
		"  dbname = app sslmode=disable":                       dialectPostgres,
		"app.db":                                               dialectSQLite,
		"./data/app.sqlite3?_busy_timeout=5000":                dialectSQLite,
		"/var/lib/app/App.DB":                                  dialectSQLite,
		existing:                                               dialectSQLite,
		"":                                                     dialectSQLite,
	} {
		got, err := detect(strings.TrimSpace(dsn))
		if assert.NoError(t, err, dsn) {
			assert.Equal(t, want, got, dsn)
		}
	}
	for dsn, want := range map[string]string{
		"app":                     "cannot tell which database",
		"postgres:/app":           "cannot tell which database",
		"dir/app":                 "cannot tell which database", // a relative path is no MySQL DSN
		"root@localhost:3306/app": "cannot tell which database", // net "localhost:3306" is no network
		"user:secret@db/app":      `"user:***@db/app"`,          // messages never show a password
	} {
		_, err := detect(dsn)
		require.Error(t, err, dsn)
		assert.ErrorIs(t, err, errUsage)
		assert.Contains(t, err.Error(), want, dsn)
		assert.NotContains(t, err.Error(), "secret")
	}
}

// TestDetectAmbiguous: a DSN that reads as two databases needs -driver.
func TestDetectAmbiguous(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.WriteFile("user=postgres dbname=app", nil, 0o644))
	_, err := newTarget("", "user=postgres dbname=app")
	require.ErrorIs(t, err, errUsage)
	assert.Contains(t, err.Error(), "ambiguous: it reads as postgres and as sqlite; give -driver")

	tg, err := newTarget("sqlite", "user=postgres dbname=app")
	require.NoError(t, err)
	assert.Equal(t, dialectSQLite, tg.dialect)
	tg, err = newTarget("postgres", "user=postgres dbname=app")
	require.NoError(t, err)
	assert.Equal(t, dialectPostgres, tg.dialect)
}

func TestNewTarget(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ driver, dsn, dialect, want string }{
		// MariaDB/MySQL: go-sql-driver's own form passes through unchanged.
		{"", "root@tcp(127.0.0.1:3306)/app?parseTime=true", dialectMySQL, "root@tcp(127.0.0.1:3306)/app?parseTime=true"},
		{"", "root@unix(/run/mysqld/mysqld.sock)/app", dialectMySQL, "root@unix(/run/mysqld/mysqld.sock)/app"},
		{"", "root@/app", dialectMySQL, "root@/app"},
		{"mysql", "/app", dialectMySQL, "/app"},
		{"mariadb", "root@/app", dialectMySQL, "root@/app"},
		// mysql:// before either form, or a URL.
		{"", "mysql://root@unix(/run/mysqld/mysqld.sock)/app", dialectMySQL, "root@unix(/run/mysqld/mysqld.sock)/app"},
		{"", "MySQL://root@/app", dialectMySQL, "root@/app"},
		{"", "mysql://root:p%40ss@db.example:3307/stats?parseTime=true", dialectMySQL, "root:p@ss@tcp(db.example:3307)/stats?parseTime=true"},
		{"", "mariadb://root@localhost/stats", dialectMySQL, "root@tcp(localhost:3306)/stats"},
		{"mysql", "mysql://root@localhost/app?socket=/run/mysqld/mysqld.sock&parseTime=true", dialectMySQL,
			"root@unix(/run/mysqld/mysqld.sock)/app?parseTime=true"},
		// PostgreSQL: key=value and URLs pass through unchanged.
		{"", "user=postgres dbname=app", dialectPostgres, "user=postgres dbname=app"},
		{"", "host=/var/run/postgresql port=5432 user=postgres dbname=app", dialectPostgres, "host=/var/run/postgresql port=5432 user=postgres dbname=app"},
		{"", "postgres://u:p@localhost:5432/db?sslmode=disable", dialectPostgres, "postgres://u:p@localhost:5432/db?sslmode=disable"},
		{"", "postgresql://u@/db?host=/var/run/postgresql", dialectPostgres, "postgresql://u@/db?host=/var/run/postgresql"},
		{"", "postgres://u@h/db?note=@tcp(", dialectPostgres, "postgres://u@h/db?note=@tcp("},
		{"postgres", "dbname=app", dialectPostgres, "dbname=app"},
		{"pg", "postgres://u@h/db", dialectPostgres, "postgres://u@h/db"},
		// SQLite: a path, sqlite://path or a file: URI, with a busy timeout and WAL unless set.
		{"", "app.db", dialectSQLite, "app.db?_busy_timeout=10000&_journal_mode=WAL"},
		{"", "file:app.db?_busy_timeout=5000", dialectSQLite, "file:app.db?_busy_timeout=5000&_journal_mode=WAL"},
		{"", "sqlite://" + dir + "/x.db", dialectSQLite, dir + "/x.db?_busy_timeout=10000&_journal_mode=WAL"},
		{"sqlite", dir + "/counters", dialectSQLite, dir + "/counters?_busy_timeout=10000&_journal_mode=WAL"},
		{"sqlite3", "sqlite3://rel.db", dialectSQLite, "rel.db?_busy_timeout=10000&_journal_mode=WAL"},
	} {
		t.Run(tc.driver+" "+tc.dsn, func(t *testing.T) {
			tg, err := newTarget(tc.driver, tc.dsn)
			require.NoError(t, err)
			assert.Equal(t, tc.dialect, tg.dialect)
			assert.Equal(t, tc.want, tg.dsn)
		})
	}

	tg, err := newTarget("", "")
	require.NoError(t, err)
	assert.Contains(t, tg.dsn, "slotbench.db?_busy_timeout=10000&_journal_mode=WAL", "empty: a temporary SQLite file")
	tmp := strings.TrimPrefix(strings.Split(tg.dsn, "?")[0], "file:")
	tg.cleanup()
	_, err = os.Stat(filepath.Dir(tmp))
	assert.True(t, os.IsNotExist(err), "cleanup removes the temporary directory")
}

func TestNewTargetErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ driver, dsn, want string }{
		{"oracle", "x", `-driver "oracle": want mysql, postgres or sqlite`},
		{"mysql", "postgres://u@h/db", "-driver mysql, but -dsn starts with postgres://"},
		{"postgres", "sqlite://x.db", "-driver postgres, but -dsn starts with sqlite://"},
		{"mysql", "", "-dsn is empty"},
		{"postgres", "", "-dsn is empty"},
		{"mysql", "root@tcp(127.0.0.1:3306/app", "is not a MariaDB/MySQL DSN: invalid DSN: network address not terminated"},
		{"mysql", "app", "is not a MariaDB/MySQL DSN: invalid DSN: missing the slash"},
		{"mysql", "root@tcp(h:3306)/", "names no database"},
		{"mysql", "root@pipe(x)/app", `network "pipe" is not tcp or unix`},
		{"mysql", "root@tcp(h)/app?parseTime=maybe", "is not a MariaDB/MySQL DSN"},
		{"", "mysql://root:secret@tcp(h:3306/app", "root:***@tcp(h:3306/app"},
		{"postgres", "host=h port=notaport", "not a PostgreSQL DSN"},
		{"postgres", "host=h password=secret port=notaport", "not a PostgreSQL DSN"},
		{"", "postgres://u:secret@h:99999/db", "not a PostgreSQL DSN"},
		{"", "postgres://u@h/db?sslmode=sometimes", "not a PostgreSQL DSN"},
		{"postgres", "host='unterminated", "not a PostgreSQL DSN"},
		{"", ":memory:", "in-memory SQLite database"},
		{"sqlite", "file::memory:?cache=shared", "in-memory SQLite database"},
		{"sqlite", filepath.Join(dir, "missing", "x.db"), "does not exist"},
		{"sqlite", dir, "is a directory"},
		{"", "sqlite://", "names no SQLite file"},
		{"sqlite", "file:?mode=rwc", "names no SQLite file"},
		{"", "user=postgres dbname=app bogus", "not a PostgreSQL DSN"},
	} {
		t.Run(tc.driver+" "+tc.dsn, func(t *testing.T) {
			_, err := newTarget(tc.driver, tc.dsn)
			require.Error(t, err)
			assert.ErrorIs(t, err, errUsage)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"root:pw@tcp(h)/db":               "root:***@tcp(h)/db",
		"root:p@ss@tcp(h)/db":             "root:***@tcp(h)/db",
		"mysql://u:pw@h/db?x=a@b":         "mysql://u:***@h/db?x=a@b",
		"root@tcp(h)/db":                  "root@tcp(h)/db",
		"host=h password='a b' user=u":    "host=h password=*** user=u",
		"host=h PASSWORD = secret user=u": "host=h PASSWORD = *** user=u",
	} {
		assert.Equal(t, want, redact(in), in)
	}
}

// TestDSNFormsConnect connects through every DSN form the drivers take, to
// the servers of SLOTTED_MYSQL_DSN and SLOTTED_POSTGRES_DSN: unix sockets
// (found by asking the server where its socket is), libpq key=value with and
// without a host, and URLs. Each form must be detected without -driver and
// land in the same database.
func TestDSNFormsConnect(t *testing.T) {
	for _, d := range testDBs(t) {
		if d.name == dialectSQLite {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			base, err := newTarget(d.name, d.dsn)
			require.NoError(t, err)
			db := openTest(t, base)
			forms := map[string]bool{} // DSN -> over a unix socket
			var wantDB string
			switch d.name {
			case dialectMySQL:
				cfg, err := gomysql.ParseDSN(d.dsn)
				require.NoError(t, err)
				wantDB = cfg.DBName
				var sock string
				require.NoError(t, db.Raw("SELECT @@socket").Scan(&sock).Error)
				user := url.UserPassword(cfg.User, cfg.Passwd).String()
				if cfg.Passwd == "" {
					user = url.User(cfg.User).String()
				}
				plainUser := cfg.User
				if cfg.Passwd != "" {
					plainUser += ":" + cfg.Passwd
				}
				if cfg.Net == "tcp" {
					forms[fmt.Sprintf("mysql://%s@%s/%s", user, cfg.Addr, wantDB)] = false
					forms[fmt.Sprintf("%s@tcp(%s)/%s", plainUser, cfg.Addr, wantDB)] = false
					if cfg.Addr == "127.0.0.1:3306" {
						forms[fmt.Sprintf("%s@/%s", plainUser, wantDB)] = false // the driver's default address
					}
				}
				if _, err := os.Stat(sock); err == nil {
					forms[fmt.Sprintf("%s@unix(%s)/%s", plainUser, sock, wantDB)] = true
					forms[fmt.Sprintf("mysql://%s@unix(%s)/%s", plainUser, sock, wantDB)] = true
					forms[fmt.Sprintf("mysql://%s@localhost/%s?socket=%s", user, wantDB, sock)] = true
				} else {
					t.Logf("socket %s is not on this machine: socket forms not tried", sock)
				}
			case dialectPostgres:
				cfg, err := pgx.ParseConfig(d.dsn)
				require.NoError(t, err)
				wantDB = cfg.Database
				var dirs string
				require.NoError(t, db.Raw("SHOW unix_socket_directories").Scan(&dirs).Error)
				sockDir := strings.TrimSpace(strings.Split(dirs, ",")[0])
				pw, user := "", url.User(cfg.User)
				if cfg.Password != "" {
					pw, user = " password="+cfg.Password, url.UserPassword(cfg.User, cfg.Password)
				}
				if !strings.HasPrefix(cfg.Host, "/") {
					forms[fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", user, cfg.Host, cfg.Port, wantDB)] = false
					forms[fmt.Sprintf("host=%s port=%d user=%s%s dbname=%s sslmode=disable", cfg.Host, cfg.Port, cfg.User, pw, wantDB)] = false
				}
				if _, err := os.Stat(filepath.Join(sockDir, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))); err == nil {
					forms[fmt.Sprintf("host=%s port=%d user=%s%s dbname=%s", sockDir, cfg.Port, cfg.User, pw, wantDB)] = true
					forms[fmt.Sprintf("postgresql://%s@/%s?host=%s&port=%d", user, wantDB, sockDir, cfg.Port)] = true
					if sockDir == "/var/run/postgresql" && cfg.Port == 5432 && os.Getenv("PGHOST") == "" && os.Getenv("PGPORT") == "" {
						// libpq's defaults: no host means the socket in /var/run/postgresql.
						forms[fmt.Sprintf("user=%s%s dbname=%s", cfg.User, pw, wantDB)] = true
					}
				} else {
					t.Logf("socket directory %s is not on this machine: socket forms not tried", sockDir)
				}
			}
			require.NotEmpty(t, forms)
			for form, socket := range forms {
				tg, err := newTarget("", form)
				require.NoError(t, err, form)
				assert.Equal(t, d.name, tg.dialect, form)
				conn := openTest(t, tg)
				// The database, and the transport: a unix socket connection has
				// no client address (PostgreSQL) or comes from "localhost" (MariaDB).
				var got string
				var overSocket bool
				if d.name == dialectPostgres {
					require.NoError(t, conn.Raw("SELECT current_database(), inet_client_addr() IS NULL").Row().Scan(&got, &overSocket), form)
				} else {
					require.NoError(t, conn.Raw("SELECT DATABASE(), HOST = 'localhost' FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").
						Row().Scan(&got, &overSocket), form)
				}
				assert.Equal(t, wantDB, got, form)
				assert.Equal(t, socket, overSocket, "over a unix socket: %s", form)
				t.Logf("connected (socket %v): %s", socket, redact(form))
			}
		})
	}
}
