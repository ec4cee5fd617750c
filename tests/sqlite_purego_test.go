//go:build !sqlite_cgo

package tests

import (
	"database/sql/driver"

	sqlite3driver "github.com/ncruces/go-sqlite3/driver"
	_ "github.com/ncruces/go-sqlite3/embed" // SQLite itself, compiled to WebAssembly
	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/gorm"
)

// By default the suite runs SQLite through ncruces/go-sqlite3 (pure Go), so a
// first `go test` compiles no C: gorm.io/driver/sqlite's cgo build is one
// gcc process of about a minute, the whole cold run's critical path.
// `-tags sqlite_cgo` runs the same tests on gorm.io/driver/sqlite, the driver
// most users run; .ci/run runs both.
const sqliteDriverName = "ncruces/go-sqlite3 (pure Go)"

// The driver's DSN parameters for sqliteDSN (sqlite_test.go).
const (
	sqliteBusyParam = "_pragma=busy_timeout(%d)"
	sqliteWALParam  = "_pragma=journal_mode(WAL)"
)

func sqliteOpen(dsn string) gorm.Dialector { return gormlite.Open(dsn) }

// sqliteOn is the dialector over an existing pool.
func sqliteOn(pool gorm.ConnPool) gorm.Dialector { return gormlite.OpenDB(pool) }

// sqliteSQLDriver is the database/sql driver, for connectors that wrap it.
func sqliteSQLDriver() driver.Driver { return &sqlite3driver.SQLite{} }
