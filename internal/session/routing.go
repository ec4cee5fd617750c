// Package session derives the plugin's statements from the caller's *gorm.DB:
// its context, its transaction (joined, never retried) or connection pool,
// and its dbresolver routing; the plugin's prepared statements; the
// transactions it opens for itself (COMMIT awaited by the caller's context,
// BEGIN IMMEDIATE on SQLite, Galera's causal wait); and retries of lock
// conflicts, kept out of the user's logger until they are final.
//
// One rule runs through it: every read that decides a write or a delete, and
// every write transaction, starts at Primary.
package session

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"maps"
	"strings"

	"gorm.io/gorm"
)

// The caller's *gorm.DB decides where the plugin's statements run: its
// context, its transaction (joined, never retried) or connection pool, and
// its dbresolver routing. Everything here derives the plugin's sessions from it.

// Context is the caller's context (db.WithContext), or Background.
func Context(db *gorm.DB) context.Context {
	if ctx := db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}

// InTx reports whether db runs inside the caller's transaction.
func InTx(db *gorm.DB) bool {
	_, ok := db.Statement.ConnPool.(gorm.TxCommitter)
	return ok
}

// dbresolver (gorm.io/plugin/dbresolver), which the library does not import,
// routes each statement by settings on it: dbresolver.Write stores
// ResolverWrite (and drops ResolverRead), and its callback, registered under
// ResolverCallback on every chain, picks the pool: a source for writes, for
// locking reads and under Write, else a replica. dbresolver.Write itself runs
// that callback on the spot, so that a transaction begun from the statement
// starts on a source; primary does the same. A plugin-namespaced clause
// (dbresolver.Use) picks which resolver; Inherit carries it.
const (
	ResolverWrite    = "gorm:db_resolver:write"
	ResolverRead     = "gorm:db_resolver:read"
	ResolverCallback = "gorm:db_resolver"
)

// Primary returns a fresh, chainable *gorm.DB like Routed's whose statements
// run on the primary: what dbresolver.Write does, for the caller's resolver
// (dbresolver.Use, or the one dbresolver configured for table). Every read
// that decides a write or a delete, and every write transaction, starts here.
// Inside the caller's transaction it is that transaction; without dbresolver
// it is the caller's pool.
func Primary(db *gorm.DB, table string) *gorm.DB {
	tx := Routed(db)
	tx.Statement.Settings.Delete(ResolverRead)
	tx.Statement.Settings.Store(ResolverWrite, struct{}{})
	if fc := tx.Callback().Query().Get(ResolverCallback); fc != nil && !InTx(tx) {
		tx.Statement.Table = table // dbresolver's per-table resolvers go by the statement's table
		fc(tx)
		tx.Statement.Table = ""
	}
	return tx.Session(&gorm.Session{}) // each chain gets a copy: routing, no Where/Model state
}

// pinnedPool keeps statements on the pool or connection already chosen for
// them: dbresolver re-resolves every statement whose pool is not a
// transaction, so it would move the statements of a connection pinned for
// BEGIN IMMEDIATE (or a fill meant for the replica its records came from) to
// a pool of its choosing. Commit and Rollback make it look like a transaction
// to dbresolver; nothing calls them.
type pinnedPool struct{ gorm.ConnPool }

var errPinned = errors.New("slotted: a pinned connection is not a transaction")

func (pinnedPool) Commit() error   { return errPinned }
func (pinnedPool) Rollback() error { return errPinned }

// Pin keeps conn's statements on its current pool or connection.
func Pin(conn *gorm.DB) *gorm.DB {
	if _, ok := conn.Statement.ConnPool.(gorm.TxCommitter); !ok {
		conn.Statement.ConnPool = pinnedPool{conn.Statement.ConnPool}
	}
	return conn
}

// Inherit carries the caller's routing state into a statement the plugin
// builds from scratch: settings (dbresolver.Write/Read live there) and
// plugin-namespaced clauses (dbresolver.Use). With all set (raw SQL, where
// clauses do not change the statement) every clause is carried.
func Inherit(dst, src *gorm.Statement, all bool) {
	src.Settings.Range(func(k, v any) bool {
		dst.Settings.Store(k, v)
		return true
	})
	if len(src.Clauses) == 0 {
		return
	}
	if all {
		dst.Clauses = maps.Clone(src.Clauses)
		return
	}
	for name, c := range src.Clauses {
		if strings.Contains(name, ":") {
			dst.Clauses[name] = c
		}
	}
}

// Routed returns a fresh, chainable *gorm.DB for a statement the plugin builds
// with gorm's builders: the caller's context, connection or transaction and
// routing, none of its Where/Model state.
func Routed(db *gorm.DB) *gorm.DB {
	tx := db.Session(&gorm.Session{NewDB: true, Initialized: true})
	Inherit(tx.Statement, db.Statement, false)
	return tx
}

// EndSQLite ends the transaction on a pinned connection, even when the
// caller's context is already cancelled. If ROLLBACK fails too, the
// connection is discarded rather than returned to the pool mid-transaction.
func EndSQLite(conn *gorm.DB, stmt string) error {
	err := conn.WithContext(context.WithoutCancel(conn.Statement.Context)).Exec(stmt).Error
	if err != nil && stmt == "ROLLBACK" {
		cp := conn.Statement.ConnPool
		if pinned, ok := cp.(pinnedPool); ok {
			cp = pinned.ConnPool
		}
		if c, ok := cp.(*sql.Conn); ok {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	return err
}

// FillSetting is the gorm setting that turns auto-fill on or off for one
// session (slotted.WithFill, slotted.WithoutFill).
const FillSetting = "slotted:fill"

// WithoutFill is slotted.WithoutFill: the plugin's own reads of models
// never fill counters.
func WithoutFill(db *gorm.DB) *gorm.DB { return db.Set(FillSetting, false) }

// OnceKeySetting is the gorm setting WithOnceKey stores the key in, for the
// applied fields auto-fill fills.
const OnceKeySetting = "slotted:once_key"
