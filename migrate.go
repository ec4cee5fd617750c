package slotted

import (
	"errors"
	"strings"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"
)

// Migrate creates or migrates the counter table and the once table (AddOnce's
// keys, Config.OnceTable). db.Use does this already
// unless Config.DisableAutoMigrate is set; call Migrate from your own
// migration step in that case. It is idempotent.
//
// The table it creates (MySQL/MariaDB; the others differ only in types):
//
//	CREATE TABLE `slotted_counters` (
//	  `record_type` varbinary(128) NOT NULL,
//	  `record_id`   varbinary(128) NOT NULL,
//	  `slot`        int NOT NULL,
//	  `count`       bigint NOT NULL,
//	  PRIMARY KEY (`record_type`,`record_id`,`slot`))
//
// On SQLite the table is created WITHOUT ROWID, so the primary key is the
// table rather than a second B-tree beside it.
func Migrate(db *gorm.DB) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	return p.migrate(db)
}

// Many instances of an application may start at once on a database without
// the table (every rolling deploy of a new install). Each one's AutoMigrate
// checks for the table and creates it; between the two another may have
// created it, and the CREATE fails: MySQL 1050, PostgreSQL 42P07, 42710 or
// 23505 (on pg_type_typname_nsp_index, when both create the row type at
// once), SQLite "already exists". Such an error is taken for what it is,
// another instance's success, and the migration is run again: it now finds
// the table (or column) and checks it as on any later start. No lock is
// taken: advisory locks (GET_LOCK, pg_advisory_lock) need a pinned session
// and are not replicated by Galera.
//
// The check reads the primary (dbresolver.Write, with the caller's routing):
// on a replica that lags, or lacks the table, it would decide wrongly.
func (p *Plugin) migrate(db *gorm.DB) error {
	if err := p.migrateTable(db, p.cfg.Table, &SlottedCounter{}); err != nil {
		return err
	}
	return p.migrateOnce(db)
}

// migrateTable migrates one of the plugin's tables as described above.
func (p *Plugin) migrateTable(db *gorm.DB, table string, model any) error {
	var err error
	for range migrateAttempts {
		tx := session.Primary(db, table).Table(table)
		if p.dialect.WithoutRowID {
			tx = tx.Set("gorm:table_options", " WITHOUT ROWID")
		}
		if err = tx.AutoMigrate(model); err == nil || !alreadyExists(err) {
			return err
		}
	}
	return err
}

// migrateAttempts bounds the re-runs: each one that fails does so because
// another instance created something it then finds.
const migrateAttempts = 5

// alreadyExists reports whether a migration statement failed because another
// instance created the same table, column or index first.
func alreadyExists(err error) bool {
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		switch state.SQLState() {
		case "42P07", "42710", "42701", "23505": // duplicate table/object/column; catalog unique index
			return true
		}
		return false
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		msg := e.Error()
		for _, code := range []string{"Error 1050 ", "Error 1060 ", "Error 1061 "} { // table, column, key name
			if strings.HasPrefix(msg, code) {
				return true
			}
		}
	}
	msg := err.Error()
	return strings.Contains(msg, "already exists") || strings.Contains(msg, "duplicate column name") // SQLite
}
