//go:build sqlite_cgo

package tests

import (
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// With -tags sqlite_cgo the suite runs SQLite through gorm.io/driver/sqlite
// (mattn/go-sqlite3, cgo), the driver most GORM users run. See
// sqlite_purego_test.go for the default.
const sqliteDriverName = "gorm.io/driver/sqlite (cgo)"

// The driver's DSN parameters for sqliteDSN (sqlite_test.go).
const (
	sqliteBusyParam = "_busy_timeout=%d"
	sqliteWALParam  = "_journal_mode=WAL"
)

func sqliteOpen(dsn string) gorm.Dialector { return sqlite.Open(dsn) }

// sqliteOn is the dialector over an existing pool.
func sqliteOn(pool gorm.ConnPool) gorm.Dialector { return &sqlite.Dialector{Conn: pool} }

// sqliteSQLDriver is the database/sql driver, for connectors that wrap it.
func sqliteSQLDriver() driver.Driver { return &sqlite3.SQLiteDriver{} }
