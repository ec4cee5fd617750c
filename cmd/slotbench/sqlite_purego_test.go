//go:build !sqlite_cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestOpenSQLitePragmas: gorm.io/driver/sqlite's DSN parameters, which -dsn
// accepts and sqliteDSN adds, reach the pure-Go driver as PRAGMAs.
func TestOpenSQLitePragmas(t *testing.T) {
	for _, dsn := range []string{
		filepath.Join(t.TempDir(), "a.db") + "?_busy_timeout=4321&_journal_mode=WAL&_fk=1",
		"file:" + filepath.Join(t.TempDir(), "b.db") + "?_timeout=4321&_journal=wal&_foreign_keys=true",
	} {
		db, err := gorm.Open(openSQLite(dsn), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err, dsn)
		var busy int
		var mode string
		var fk int
		require.NoError(t, db.Raw("PRAGMA busy_timeout").Scan(&busy).Error)
		require.NoError(t, db.Raw("PRAGMA journal_mode").Scan(&mode).Error)
		require.NoError(t, db.Raw("PRAGMA foreign_keys").Scan(&fk).Error)
		assert.Equal(t, 4321, busy, dsn)
		assert.Equal(t, "wal", mode, dsn)
		assert.Equal(t, 1, fk, dsn)
		sqlDB, _ := db.DB()
		_ = sqlDB.Close()
	}
}
