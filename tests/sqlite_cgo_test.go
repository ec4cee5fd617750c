//go:build sqlite_cgo

package tests

import (
	"database/sql/driver"
	"fmt"

	"github.com/mattn/go-sqlite3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// With -tags sqlite_cgo the suite runs SQLite through gorm.io/driver/sqlite
// (mattn/go-sqlite3, cgo), the driver most GORM users run. See
// sqlite_purego_test.go for the default.
const sqliteDriverName = "gorm.io/driver/sqlite (cgo)"

// sqliteDSN names a SQLite file with a busy timeout and, if wal, WAL mode.
func sqliteDSN(path string, busyMS int, wal bool) string {
	dsn := fmt.Sprintf("file:%s?_busy_timeout=%d", path, busyMS)
	if wal {
		dsn += "&_journal_mode=WAL"
	}
	return dsn
}

func sqliteOpen(dsn string) gorm.Dialector { return sqlite.Open(dsn) }

// sqliteOn is the dialector over an existing pool.
func sqliteOn(pool gorm.ConnPool) gorm.Dialector { return &sqlite.Dialector{Conn: pool} }

// sqliteSQLDriver is the database/sql driver, for connectors that wrap it.
func sqliteSQLDriver() driver.Driver { return &sqlite3.SQLiteDriver{} }
