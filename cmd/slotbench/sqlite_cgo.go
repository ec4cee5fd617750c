//go:build sqlite_cgo

package main

import (
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// sqliteDriverName: built with -tags sqlite_cgo, slotbench measures SQLite
// through gorm.io/driver/sqlite (mattn/go-sqlite3, cgo), the driver most
// GORM users run.
const sqliteDriverName = "gorm.io/driver/sqlite (cgo)"

func openSQLite(dsn string) gorm.Dialector { return sqlite.Open(dsn) }
