package slotted

import (
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/tables"
)

// Writes to missing records. A counter needs no row of its parent: Add to
// post 999 that does not exist succeeds and leaves an orphan counter (Sweep
// finds it). An API that answers 404 needs the record looked up anyway, and
// MustExist (or Config.RequireRecords) makes the write do it: one primary-key
// SELECT of the record on the primary before the write, honouring the
// model's soft delete, and ErrRecordNotFound without writing anything when
// the record is missing.
//
// It is a guard, not a constraint: a record deleted between the check and the
// write (outside a transaction, or by a transaction that commits first) still
// gets its counter written after its delete removed the others. Sweep
// removes those.

// ErrRecordNotFound: the record a write under MustExist (or Config.RequireRecords) names does not exist
// (or is soft-deleted); nothing was written. It wraps gorm.ErrRecordNotFound, so handlers that answer
// 404 on gorm's error answer it for this one too.
var ErrRecordNotFound = fmt.Errorf("slotted: the record does not exist: %w", gorm.ErrRecordNotFound)

const mustExistSetting = "slotted:must_exist"

// MustExist makes the writes run on the returned *gorm.DB (Add, Increment,
// AddOnce, RemoveOnce, AddEach, AddMany, Buffer.Add: the writes that take
// models) check that the records exist first, returning ErrRecordNotFound
// otherwise (AddMany: if any is missing, none is written).
// MustExist(db, false) turns Config.RequireRecords off for them. Writes named
// by Ref have no table to look in and are never checked.
//
//	err := slotted.Increment(slotted.MustExist(db), &Post{ID: 999}, "likes")
//	// SELECT `id` FROM `posts` WHERE `posts`.`id` = 999 LIMIT 1
//	// errors.Is(err, gorm.ErrRecordNotFound): answer 404; nothing was written
func MustExist(db *gorm.DB, on ...bool) *gorm.DB {
	return db.Set(mustExistSetting, len(on) == 0 || on[0])
}

// checkAllExist is checkExists for AddMany's records: one COUNT per 1000
// distinct keys on the primary; any missing one refuses the whole write.
func (p *Plugin) checkAllExist(db *gorm.DB, m *meta.Model, rs meta.Records) error {
	on := p.cfg.RequireRecords
	if s, ok := db.Get(mustExistSetting); ok {
		on, _ = s.(bool)
	}
	if !on {
		return nil
	}
	for chunk := range slices.Chunk(rs.IDs, tables.LoadChunk) {
		keys := make([]any, len(chunk))
		for i, id := range chunk {
			keys[i] = m.Key.Value(rs.ByID[id][0])
		}
		var n int64
		q := session.WithoutFill(session.Primary(db, m.Table))
		err := q.Model(reflect.New(m.Type).Interface()).
			Where(m.Key.In(clause.CurrentTable, keys)).
			Count(&n).Error
		if q.DryRun {
			return ErrDryRun
		}
		if err != nil {
			return err
		}
		if n < int64(len(chunk)) {
			return fmt.Errorf("%w: %d of %d %s records", ErrRecordNotFound, int64(len(chunk))-n, len(chunk), m.Type)
		}
	}
	return nil
}

// checkExists returns ErrRecordNotFound when the write's record v is missing
// and the check is on for db.
func (p *Plugin) checkExists(db *gorm.DB, v reflect.Value) error {
	on := p.cfg.RequireRecords
	if s, ok := db.Get(mustExistSetting); ok {
		on, _ = s.(bool)
	}
	if !on {
		return nil
	}
	m, err := p.models.OfType(db, v.Type())
	if err != nil {
		return err
	}
	var found []string
	q := session.WithoutFill(session.Primary(db, m.Table))
	err = q.Model(reflect.New(m.Type).Interface()).
		Where(m.Key.Eq(clause.CurrentTable, v)).
		Limit(1).Pluck(m.Key.Columns()[0], &found).Error
	if q.DryRun { // rendered and logged; nothing found is not ErrRecordNotFound
		return ErrDryRun
	}
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return fmt.Errorf("%w: %s %v", ErrRecordNotFound, m.Type, m.Key.Value(v))
	}
	return nil
}

// writeTarget is Registry.Target for a write: a pointer (meta.PointerArg)
// to a record that exists, when that is asked for.
func (p *Plugin) writeTarget(db *gorm.DB, model any, name string) (*meta.Counter, reflect.Value, string, error) {
	if err := meta.PointerArg(model); err != nil {
		return nil, reflect.Value{}, "", err
	}
	c, v, id, err := p.models.Target(db, model, name)
	if err == nil {
		err = p.checkExists(db, v) // MustExist, Config.RequireRecords (exists.go)
	}
	return c, v, id, err
}
