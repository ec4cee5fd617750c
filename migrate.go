package slotted

import "gorm.io/gorm"

// Migrate creates or migrates the counter table. db.Use does this already
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

func (p *Plugin) migrate(db *gorm.DB) error {
	tx := db.Session(&gorm.Session{NewDB: true}).Table(p.cfg.Table)
	if p.dialect.withoutRowID {
		tx = tx.Set("gorm:table_options", " WITHOUT ROWID")
	}
	return tx.AutoMigrate(&SlottedCounter{})
}
