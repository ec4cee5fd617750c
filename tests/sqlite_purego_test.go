//go:build !sqlite_cgo

package tests

import (
	"database/sql/driver"
	"fmt"

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

// sqliteDSN names a SQLite file with a busy timeout and, if wal, WAL mode.
func sqliteDSN(path string, busyMS int, wal bool) string {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)", path, busyMS)
	if wal {
		dsn += "&_pragma=journal_mode(WAL)"
	}
	return dsn
}

func sqliteOpen(dsn string) gorm.Dialector { return gormlite.Open(dsn) }

// sqliteOn is the dialector over an existing pool.
func sqliteOn(pool gorm.ConnPool) gorm.Dialector { return gormlite.OpenDB(pool) }

// sqliteSQLDriver is the database/sql driver, for connectors that wrap it.
func sqliteSQLDriver() driver.Driver { return &sqlite3driver.SQLite{} }
