package diagnose

import (
	"strings"

	"gorm.io/gorm"
)

// The setting names gorm.io/plugin/dbresolver routes by: storing writeSetting
// in a statement's settings is what db.Clauses(dbresolver.Write) does. They
// are spelled out here so that this package needs gorm alone.
const (
	writeSetting = "gorm:db_resolver:write"
	readSetting  = "gorm:db_resolver:read"
)

// session returns a statement of its own for one diagnostic query. It keeps
// the caller's context, connection or transaction, settings and
// plugin-namespaced clauses (dbresolver.Use), and none of its Where/Model
// state. Lock waits and lock counters are the primary's, so it is routed to
// the primary (as dbresolver.Write would) unless the caller asked for
// dbresolver.Read explicitly. table, when set, is the table the query is
// about, so that dbresolver's per-table resolvers pick the server holding it.
//
// Each query needs its own session: the statement is initialised, so chained
// calls modify it in place.
func session(db *gorm.DB, table string) *gorm.DB {
	tx := db.Session(&gorm.Session{NewDB: true, Initialized: true})
	db.Statement.Settings.Range(func(k, v any) bool {
		tx.Statement.Settings.Store(k, v)
		return true
	})
	for name, c := range db.Statement.Clauses {
		if strings.Contains(name, ":") {
			tx.Statement.Clauses[name] = c
		}
	}
	if _, read := tx.Statement.Settings.Load(readSetting); !read {
		tx.Statement.Settings.Store(writeSetting, struct{}{})
	}
	if table != "" {
		tx = tx.Table(table)
	}
	return tx
}
