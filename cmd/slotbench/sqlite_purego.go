//go:build !sqlite_cgo

package main

import (
	"net/url"
	"strings"

	_ "github.com/ncruces/go-sqlite3/embed" // SQLite itself, compiled to WebAssembly
	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/gorm"
)

// sqliteDriverName: by default slotbench runs SQLite through the pure-Go
// ncruces/go-sqlite3, so installing it compiles no C (gorm.io/driver/sqlite's
// cgo build is a minute of gcc). -tags sqlite_cgo measures gorm.io/driver/sqlite.
const sqliteDriverName = "ncruces/go-sqlite3 (pure Go; -tags sqlite_cgo for gorm.io/driver/sqlite)"

// pragmaParams are gorm.io/driver/sqlite's DSN parameters, which -dsn accepts
// (and sqliteDSN adds), and the PRAGMA each one sets. The busy timeout comes
// first: ncruces applies _pragma parameters in order.
var pragmaParams = []struct{ param, pragma string }{
	{"_busy_timeout", "busy_timeout"}, {"_timeout", "busy_timeout"},
	{"_journal_mode", "journal_mode"}, {"_journal", "journal_mode"},
	{"_synchronous", "synchronous"}, {"_sync", "synchronous"},
	{"_foreign_keys", "foreign_keys"}, {"_fk", "foreign_keys"},
	{"_locking_mode", "locking_mode"}, {"_locking", "locking_mode"},
	{"_cache_size", "cache_size"},
}

// openSQLite opens a DSN in gorm.io/driver/sqlite's form with ncruces: a
// path or file: URI whose _busy_timeout-style parameters become _pragma ones.
func openSQLite(dsn string) gorm.Dialector {
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	values, err := url.ParseQuery(query)
	if err != nil {
		return gormlite.Open(dsn) // let the driver report it
	}
	for _, p := range pragmaParams {
		for _, v := range values[p.param] {
			values.Add("_pragma", p.pragma+"("+v+")")
		}
		values.Del(p.param)
	}
	return gormlite.Open("file:" + path + "?" + values.Encode())
}
