package tests

import "fmt"

// sqliteDSN names a SQLite file with a busy timeout and, if wal, WAL mode, in
// the form of the driver the suite runs (sqlite_purego_test.go, or
// sqlite_cgo_test.go with -tags sqlite_cgo).
func sqliteDSN(path string, busyMS int, wal bool) string {
	dsn := "file:" + path + "?" + fmt.Sprintf(sqliteBusyParam, busyMS)
	if wal {
		dsn += "&" + sqliteWALParam
	}
	return dsn
}
