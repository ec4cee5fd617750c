package slotted

import (
	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/session"
)

// prefixed applies gorm's NamingStrategy TablePrefix to the default table
// names: with NamingStrategy{TablePrefix: "app_"} the counters live in
// app_slotted_counters and the once keys in app_slotted_once, next to
// app_posts. A Table or OnceTable set in Config is used as it is.
//
// Before this the prefix was ignored. So that an upgrade does not lose sight
// of existing counters, a database that has the unprefixed table and not the
// prefixed one keeps using the unprefixed names (one HasTable round trip per
// db.Use, only when a prefix is set); renaming the tables, or setting
// Config.Table, moves to the prefixed names.
func prefixed(db *gorm.DB, cfg Config) Config {
	prefix := tablePrefix(db.NamingStrategy)
	if prefix == "" || (cfg.Table != "" && cfg.OnceTable != "") {
		return cfg
	}
	table := prefix + DefaultTable
	if cfg.Table == "" && !db.DryRun {
		// On the primary: the answer picks the table every later write goes to.
		m := session.Primary(db, table).Migrator()
		if !m.HasTable(table) && m.HasTable(DefaultTable) {
			return cfg // the tables of a version that ignored the prefix
		}
	}
	if cfg.Table == "" {
		cfg.Table = table
	}
	if cfg.OnceTable == "" {
		cfg.OnceTable = prefix + DefaultOnceTable
	}
	return cfg
}

// tablePrefix is the TablePrefix of gorm's own NamingStrategy; other
// implementations of schema.Namer are not guessed at.
func tablePrefix(n schema.Namer) string {
	switch ns := n.(type) {
	case schema.NamingStrategy:
		return ns.TablePrefix
	case *schema.NamingStrategy:
		if ns != nil {
			return ns.TablePrefix
		}
	}
	return ""
}
