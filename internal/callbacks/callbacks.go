// Package callbacks are the plugin's gorm callbacks that are not counter
// caches': counter fields kept out of the model's own SQL (omit), auto-fill
// after a query, the prepared-statement pool kept under dbresolver, the
// quiet retries, and the cleanup of a hard-deleted record's counters. The
// counter caches register their own (internal/countercache).
package callbacks

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/countercache"
	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/query"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/tables"
)

// Callbacks holds what the callbacks need; one per Plugin.
type Callbacks struct {
	Table           string
	Dialect         dialect.Dialect
	DisableAutoFill bool
	Models          *meta.Registry
	Sessions        *session.Sessions
	Reads           *query.Reader
	Caches          *countercache.Caches
	// FillExtras fills window:, series: and applied fields (the root's
	// window.go: the series type is the root's Bucket).
	FillExtras func(db *gorm.DB, m *meta.Model, v reflect.Value, key string, strict bool, names ...string) error
}

// Every gorm callback the plugin adds is registered here, in Initialize:
//
//	query   slotted:omit_query       before gorm:query       counter fields out of the model's SELECT
//	query   slotted:fill             after gorm:preload,     auto-fill: counters of the results, one batched read
//	                                 before gorm:after_query (so AfterFind hooks see them)
//	create  slotted:omit_create      before gorm:create      counter fields out of the INSERT
//	update  slotted:omit_update      before gorm:update      counter fields out of the UPDATE
//	delete  slotted:delete_ids       before gorm:delete      which records a hard delete removes
//	delete  slotted:delete_counters  after gorm:delete,      their counter rows, inside the record's transaction
//	                                 before gorm:after_delete
//	raw     slotted:prepared         after gorm:db_resolver, the plugin's own statements back on its
//	row                              before gorm:raw/row     prepared pool after dbresolver picked a pool
//	create/update/delete slotted:cache_*                     counter caches and seeds: registerCacheCallbacks
//	                                                         (countercache_callbacks.go)
func (p *Callbacks) Register(db *gorm.DB) error {
	q := db.Callback().Query()
	if err := q.Before("gorm:query").Register("slotted:omit_query", p.omitColumns); err != nil {
		return err
	}
	if err := q.After("gorm:preload").Before("gorm:after_query").Register("slotted:fill", p.autoFill); err != nil {
		return err
	}
	if err := db.Callback().Raw().After(session.ResolverCallback).Before("gorm:raw").Register("slotted:prepared", p.Sessions.KeepPrepared); err != nil {
		return err
	}
	if err := db.Callback().Row().After(session.ResolverCallback).Before("gorm:row").Register("slotted:prepared", p.Sessions.KeepPrepared); err != nil {
		return err
	}
	if err := db.Callback().Create().Before("gorm:create").Register("slotted:omit_create", p.omitColumns); err != nil {
		return err
	}
	if err := db.Callback().Update().Before("gorm:update").Register("slotted:omit_update", p.omitColumns); err != nil {
		return err
	}
	d := db.Callback().Delete()
	if err := d.Before("gorm:delete").Register("slotted:delete_ids", p.collectDeleted); err != nil {
		return err
	}
	// Bounded on both sides: with only After("gorm:delete") gorm sorts it after
	// gorm:commit_or_rollback_transaction, so the record's delete would commit
	// before its counters are removed, and a failure there could not undo it.
	if err := d.After("gorm:delete").Before("gorm:after_delete").Register("slotted:delete_counters", p.deleteCounters); err != nil {
		return err
	}
	if err := session.RegisterQuietRetry(db); err != nil {
		return err
	}
	return p.Caches.RegisterCallbacks(db)
}

// omitColumns keeps counter fields that lack gorm:"-" out of the model's own
// SQL, so a counter is never written to or read from the parent table.
func (p *Callbacks) omitColumns(db *gorm.DB) {
	if db.Error != nil || db.Statement.Schema == nil {
		return
	}
	m, _ := p.Models.OfSchema(db, db.Statement.Schema) // a bad tag is reported where counters are used
	if m == nil || len(m.Columns) == 0 {
		return
	}
	db.Statement.Omits = append(db.Statement.Omits, m.Columns...)
}

// autoFill fills the counter fields of a query's results with one batched read.
// It looks at the cached metadata before the fill setting: db.Get allocates,
// and a model without counters should cost a Find nothing.
func (p *Callbacks) autoFill(db *gorm.DB) {
	if db.Error != nil || db.Statement.Schema == nil || db.RowsAffected == 0 {
		return
	}
	// Only results of the model's own type have counter fields: not Count, Pluck, a DTO or a map.
	rv := db.Statement.ReflectValue
	if !rv.IsValid() || meta.StructType(rv.Type()) != db.Statement.Schema.ModelType {
		return
	}
	m, err := p.Models.OfSchema(db, db.Statement.Schema)
	if err == nil && len(m.Counters) == 0 {
		return
	}
	on := !p.DisableAutoFill
	if v, ok := db.Get(session.FillSetting); ok {
		on, _ = v.(bool)
	}
	if !on {
		return
	}
	if err != nil { // a bad tag, reported only where counters are used
		_ = db.AddError(err)
		return
	}
	defer leaveOutFill(db, time.Now()) // the fill's statements have lines and times of their own
	src := p.fillSource(db)
	if err := p.Reads.Fill(src, m, m.Counters, rv, false); err != nil {
		_ = db.AddError(err)
		return
	}
	if len(m.Extras) > 0 { // window:, series: and applied fields (window.go)
		key, _ := db.Get(session.OnceKeySetting)
		k, _ := key.(string)
		if err := p.FillExtras(src, m, rv, k, false); err != nil {
			_ = db.AddError(err)
		}
	}
}

// fillSource is where auto-fill reads the counters of a query's records: the
// connection or pool the records came from. Under dbresolver, which picks a
// replica per statement, that pool is pinned for the fill's read, so records
// and counters come from the same replica (same lag), unless dbresolver
// routes the counter table elsewhere than the records' table (a resolver of
// its own, or several sources): then the fill is routed as any read of the
// counter table.
func (p *Callbacks) fillSource(db *gorm.DB) *gorm.DB {
	fc := db.Callback().Query().Get(session.ResolverCallback)
	if fc == nil || db.Statement.ConnPool == nil || session.InTx(db) {
		return db // nothing re-routes the fill's read
	}
	if sourceFor(db, fc, db.Statement.Table) != sourceFor(db, fc, p.Table) {
		return db
	}
	return session.Pin(session.Routed(db))
}

// sourceFor is the pool dbresolver picks for a write to table under db's routing.
func sourceFor(db *gorm.DB, resolve func(*gorm.DB), table string) gorm.ConnPool {
	probe := session.Routed(db)
	probe.Statement.Table = table
	probe.Statement.Settings.Delete(session.ResolverRead)
	probe.Statement.Settings.Store(session.ResolverWrite, struct{}{})
	resolve(probe)
	if ps, ok := probe.Statement.ConnPool.(*gorm.PreparedStmtDB); ok { // a fresh wrapper per call
		return ps.ConnPool
	}
	return probe.Statement.ConnPool
}

// Delete cleanup. Hard-deleting a parent record through gorm removes its
// counter rows in the same statement sequence: gorm's default transaction
// around Delete (or yours), so a rolled-back delete keeps them. Soft deletes
// keep them too.
//
//	db.Delete(&post)
//	// DELETE FROM posts WHERE posts.id = 42
//	// DELETE FROM slotted_counters WHERE record_type IN ('posts.likes',...) AND record_id IN ('42')
//
// With conditions (db.Where("author_id = ?", 7).Delete(&Post{})) the ids are
// selected with the same conditions first, inside the same transaction.
// With SkipDefaultTransaction and no transaction of yours the two deletes are
// separate statements.

// deletedIDs is the statement's instance key for the record ids collected
// before the delete.
const deletedIDs = "slotted:deleted_ids"

// collectDeleted records which record ids a hard delete is about to remove.
// Where it cannot know them exactly it removes nothing: orphaned counters are
// harmless and Sweep finds them, deleting a live record's counters is not.
func (p *Callbacks) collectDeleted(db *gorm.DB) {
	s := db.Statement
	if db.Error != nil || s.Schema == nil || (len(s.Schema.DeleteClauses) > 0 && !s.Unscoped) {
		return // soft delete: the record and its counters stay
	}
	if (s.Table != "" && s.Table != s.Schema.Table) || s.TableExpr != nil {
		return // the model's struct, another table's rows
	}
	if _, limited := s.Clauses["LIMIT"]; limited {
		return // MySQL's DELETE ... LIMIT: which rows go is decided by the server
	}
	m, err := p.Models.OfSchema(db, s.Schema)
	if err != nil || len(m.Counters) == 0 {
		return
	}
	rs, _ := m.Records(s.ReflectValue, false)
	where, hasWhere := s.Clauses["WHERE"]
	if !hasWhere {
		db.InstanceSet(deletedIDs, rs.IDs)
		return
	}
	// Conditions decide the rows: select their keys the way the DELETE will
	// find them, locking them (outside SQLite, whose write lock the delete's
	// transaction holds anyway) so that none can stop matching in between.
	matched := reflect.New(reflect.SliceOf(m.Type))
	q := session.WithoutFill(session.Primary(db, m.Table)).Model(reflect.New(m.Type).Interface()).Select(m.Key.Columns())
	if s.Unscoped {
		q = q.Unscoped()
	}
	q = q.Clauses(where.Expression)
	if p.Dialect.LockingReads {
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	if len(rs.IDs) > 0 {
		keys := make([]any, 0, len(rs.IDs))
		for _, id := range rs.IDs {
			keys = append(keys, m.Key.Value(rs.ByID[id][0]))
		}
		q = q.Where(m.Key.In(clause.CurrentTable, keys))
	}
	if err := q.Find(matched.Interface()).Error; err != nil {
		_ = db.AddError(err)
		return
	}
	found, _ := m.Records(matched.Elem(), false)
	db.InstanceSet(deletedIDs, found.IDs)
}

// deleteCounters removes the counter rows of the records the delete removed.
func (p *Callbacks) deleteCounters(db *gorm.DB) {
	if db.Error != nil || db.RowsAffected == 0 || db.DryRun {
		return
	}
	v, ok := db.InstanceGet(deletedIDs)
	ids, _ := v.([]string)
	if !ok || len(ids) == 0 {
		return
	}
	m, err := p.Models.OfSchema(db, db.Statement.Schema)
	if err != nil {
		return
	}
	if _, err := p.DeleteRows(session.Routed(db).Session(&gorm.Session{}), meta.RecordTypes(m.Counters), ids); err != nil {
		_ = db.AddError(fmt.Errorf("slotted: removing counters of deleted %s: %w", m.Type, err))
	}
}

// DeleteRows removes every slot row of the given record types and ids (the
// delete cleanup's and Sweep's statement) and returns how many it removed.
func (p *Callbacks) DeleteRows(tx *gorm.DB, types []any, ids []string) (int64, error) {
	var removed int64
	for chunk := range slices.Chunk(ids, tables.LoadChunk) {
		vals := make([]any, len(chunk))
		for i, id := range chunk {
			vals[i] = id
		}
		res := tx.Table(p.Table).
			Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: types}).
			Where(clause.IN{Column: clause.Column{Name: "record_id"}, Values: vals}).
			Delete(&tables.Counter{})
		if res.Error != nil {
			return removed, res.Error
		}
		removed += res.RowsAffected
	}
	return removed, nil
}
