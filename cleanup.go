package slotted

import (
	"database/sql/driver"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

const deletedIDs = "slotted:deleted_ids"

// Hard-deleting a parent record through gorm removes its counter rows in the
// same statement sequence: gorm's default transaction around Delete (or
// yours), so a rolled-back delete keeps them. Soft deletes keep them too.
//
//	db.Delete(&post)
//	// DELETE FROM posts WHERE posts.id = 42
//	// DELETE FROM slotted_counters WHERE record_type IN ('posts.likes',...) AND record_id IN ('42')
//
// With conditions (db.Where("author_id = ?", 7).Delete(&Post{})) the ids are
// selected with the same conditions first, inside the same transaction.
// With SkipDefaultTransaction and no transaction of yours the two deletes are
// separate statements.
func (p *Plugin) registerCleanup(db *gorm.DB) error {
	d := db.Callback().Delete()
	if err := d.Before("gorm:delete").Register("slotted:delete_ids", p.collectDeleted); err != nil {
		return err
	}
	return d.After("gorm:delete").Register("slotted:delete_counters", p.deleteCounters)
}

// collectDeleted records which record ids a hard delete is about to remove.
// Where it cannot know them exactly it removes nothing: orphaned counters are
// harmless and Sweep finds them, deleting a live record's counters is not.
func (p *Plugin) collectDeleted(db *gorm.DB) {
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
	m, err := p.metaForSchema(db, s.Schema)
	if err != nil || len(m.counters) == 0 {
		return
	}
	rs, _ := m.records(s.ReflectValue, false)
	where, hasWhere := s.Clauses["WHERE"]
	if !hasWhere {
		db.InstanceSet(deletedIDs, rs.ids)
		return
	}
	// Conditions decide the rows: select their keys the way the DELETE will
	// find them, locking them (outside SQLite, whose write lock the delete's
	// transaction holds anyway) so that none can stop matching in between.
	matched := reflect.New(reflect.SliceOf(m.typ))
	q := WithoutFill(db.Session(&gorm.Session{NewDB: true})).Model(reflect.New(m.typ).Interface()).Select(m.key.column)
	if s.Unscoped {
		q = q.Unscoped()
	}
	q = q.Clauses(where.Expression)
	if db.Dialector.Name() != "sqlite" {
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	if len(rs.ids) > 0 {
		keys := make([]any, 0, len(rs.ids))
		for _, id := range rs.ids {
			keys = append(keys, m.key.value(rs.byID[id][0]))
		}
		q = q.Where(clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: m.key.column}, Values: keys})
	}
	if err := q.Find(matched.Interface()).Error; err != nil {
		_ = db.AddError(err)
		return
	}
	found, _ := m.records(matched.Elem(), false)
	db.InstanceSet(deletedIDs, found.ids)
}

// deleteCounters removes the counter rows of the records the delete removed.
func (p *Plugin) deleteCounters(db *gorm.DB) {
	if db.Error != nil || db.RowsAffected == 0 || db.DryRun {
		return
	}
	v, ok := db.InstanceGet(deletedIDs)
	ids, _ := v.([]string)
	if !ok || len(ids) == 0 {
		return
	}
	m, err := p.metaForSchema(db, db.Statement.Schema)
	if err != nil {
		return
	}
	if err := p.deleteRows(db.Session(&gorm.Session{NewDB: true}), recordTypes(m.counters), ids); err != nil {
		_ = db.AddError(fmt.Errorf("slotted: removing counters of deleted %s: %w", m.typ, err))
	}
}

// recordTypes lists the counters' record types as bind values.
func recordTypes(counters []*counter) []any {
	types := make([]any, len(counters))
	for i, c := range counters {
		types[i] = c.recordType
	}
	return types
}

// deleteRows removes every slot row of the given record types and ids.
func (p *Plugin) deleteRows(tx *gorm.DB, types []any, ids []string) error {
	for chunk := range slices.Chunk(ids, loadChunk) {
		vals := make([]any, len(chunk))
		for i, id := range chunk {
			vals[i] = id
		}
		err := tx.Table(p.cfg.Table).
			Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: types}).
			Where(clause.IN{Column: clause.Column{Name: "record_id"}, Values: vals}).
			Delete(&SlottedCounter{}).Error
		if err != nil {
			return err
		}
	}
	return nil
}

// SweepOptions configures Sweep.
type SweepOptions struct {
	// BatchSize is how many record ids are checked against the parent table at a time. Default: 500.
	BatchSize int
}

// SweepProgress reports a Sweep.
type SweepProgress struct {
	Checked int   // record ids looked up in the parent table
	Orphans int   // of those, without a parent
	Rows    int64 // counter rows removed
}

// Sweep removes the counter rows of model's counters whose parent record no
// longer exists (deleted with raw SQL, or before the plugin was installed).
// It walks the distinct record ids in batches,
//
//	SELECT DISTINCT record_id FROM slotted_counters WHERE record_type IN (...) AND record_id > ? ORDER BY record_id LIMIT 500
//	SELECT id FROM posts WHERE id IN (...)
//	DELETE FROM slotted_counters WHERE record_type IN (...) AND record_id IN (<ids not found>)
//
// Run it only for models whose primary keys are never reused (auto-increment
// integers, UUIDs): a record created again under a swept id would start at 0.
func Sweep(db *gorm.DB, model any, opts SweepOptions) (SweepProgress, error) {
	var prog SweepProgress
	p, err := pluginOf(db)
	if err != nil {
		return prog, err
	}
	if opts.BatchSize, err = batchSize(opts.BatchSize, 500, "SweepOptions.BatchSize"); err != nil {
		return prog, err
	}
	m, err := p.modelOf(db, model)
	if err != nil {
		return prog, err
	}
	if err := m.key.sweepable(); err != nil {
		return prog, err
	}
	types := recordTypes(m.counters)
	rid := clause.Column{Name: "record_id"}
	after := ""
	for {
		if err := contextOf(db).Err(); err != nil {
			return prog, err
		}
		var ids []string
		q := db.Session(&gorm.Session{NewDB: true}).Table(p.cfg.Table).Distinct("record_id").
			Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: types}).
			Order(clause.OrderByColumn{Column: rid}).Limit(opts.BatchSize)
		if after != "" {
			q = q.Where(clause.Gt{Column: rid, Value: after})
		}
		if err := q.Pluck("record_id", &ids).Error; err != nil {
			return prog, err
		}
		if len(ids) == 0 {
			return prog, nil
		}
		after = ids[len(ids)-1]
		orphans, err := p.orphans(db, m, ids)
		if err != nil {
			return prog, err
		}
		prog.Checked += len(ids)
		prog.Orphans += len(orphans)
		if len(orphans) > 0 {
			res := db.Session(&gorm.Session{NewDB: true}).Table(p.cfg.Table).
				Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: types}).
				Where(clause.IN{Column: rid, Values: orphans}).Delete(&SlottedCounter{})
			if res.Error != nil {
				return prog, res.Error
			}
			prog.Rows += res.RowsAffected
		}
		if len(ids) < opts.BatchSize {
			return prog, nil
		}
	}
}

// orphans returns the ids among ids that have no row in the model's table.
func (p *Plugin) orphans(db *gorm.DB, m *modelMeta, ids []string) ([]any, error) {
	keys := make([]any, 0, len(ids))
	for _, id := range ids {
		if k, ok := m.key.parse(id); ok {
			keys = append(keys, k)
		}
	}
	found := reflect.New(reflect.SliceOf(m.typ))
	if len(keys) > 0 {
		// Unscoped: a soft-deleted record still owns its counters.
		err := WithoutFill(db.Session(&gorm.Session{NewDB: true})).Unscoped().Model(reflect.New(m.typ).Interface()).Select(m.key.column).
			Where(clause.IN{Column: clause.Column{Name: m.key.column}, Values: keys}).Find(found.Interface()).Error
		if err != nil {
			return nil, err
		}
	}
	exists, _ := m.records(found.Elem(), false)
	var out []any
	for _, id := range ids {
		if _, ok := exists.byID[id]; !ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// sweepable reports whether record ids can be turned back into keys to look
// records up by: integers and strings can; other types only if their Value
// is text or an integer (a uuid.UUID, say), not bytes written out as hex.
func (k recordKey) sweepable() error {
	if k.kind != reflect.Interface {
		return nil
	}
	if k.typ.Kind() == reflect.Pointer {
		return fmt.Errorf("%w: Sweep cannot look %s keys up from their record_id text", ErrUnsupportedKey, k.typ)
	}
	if v, ok := reflect.New(k.typ).Elem().Interface().(driver.Valuer); ok {
		if dv, err := v.Value(); err == nil {
			switch dv.(type) {
			case string, int64:
				return nil
			}
		}
	}
	return fmt.Errorf("%w: Sweep cannot look %s keys up from their record_id text", ErrUnsupportedKey, k.typ)
}

// parse turns a record_id back into a primary key value to query the parent
// table with; ok is false when no record of this model can have that id.
func (k recordKey) parse(id string) (any, bool) {
	switch k.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(id, 10, k.typ.Bits())
		return n, err == nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(id, 10, k.typ.Bits())
		return n, err == nil
	}
	return id, true // strings, and types gorm binds from their text form
}
