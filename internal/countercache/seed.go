package countercache

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/errs"
)

// Counter fields of new records. db.Create(&Post{Likes: 5}) stores 5: the
// counter is seeded with the field's value in the Create's transaction (one
// upsert per non-zero counter per record, in key order), so what the record
// says is what the counter holds. A counter cache's field is refused instead
// (errs.ErrCounterCache, nothing written): its children are its only source.
//
// A record whose primary key is set before an upsert (Save, OnConflict) may
// already exist, so its fields are left alone, as any update leaves them.

// freshKey carries, for an upsert, which records had no primary key before the
// INSERT: only those are certainly new.
const freshKey = "slotted:fresh"

// checkSeeds refuses new records with a non-zero counter-cache field.
func (p *Caches) checkSeeds(db *gorm.DB, m *meta.Model, upsert bool) error {
	var fresh []bool
	var err error
	meta.EachStruct(db.Statement.ReflectValue, func(v reflect.Value) {
		isNew := true
		if upsert {
			isNew = m.Key.Unset(v)
			fresh = append(fresh, isNew)
		}
		if !isNew || err != nil {
			return
		}
		for _, c := range m.Counters {
			if p.cacheOf(c) == nil {
				continue
			}
			if f, ok := meta.FieldAt(v, c.Index); ok && !f.IsZero() {
				err = fmt.Errorf("%w: %s.%s is %v on a new record; leave it 0, the children count", errs.ErrCounterCache, m.Type, c.Name, f.Interface())
				return
			}
		}
	})
	if upsert {
		db.InstanceSet(freshKey, fresh)
	}
	return err
}

// seed adds the counter fields of the records a Create inserted to their counters.
func (p *Caches) seed(db *gorm.DB, m *meta.Model, upsert bool) error {
	var fresh []bool
	if upsert {
		v, _ := db.InstanceGet(freshKey)
		fresh, _ = v.([]bool)
	}
	type seedRow struct {
		c  *meta.Counter
		id string
		n  int64
	}
	var rows []seedRow
	i := -1
	meta.EachStruct(db.Statement.ReflectValue, func(v reflect.Value) {
		i++
		if upsert && (i >= len(fresh) || !fresh[i]) {
			return
		}
		for _, c := range m.Counters {
			if p.cacheOf(c) != nil {
				continue
			}
			f, ok := meta.FieldAt(v, c.Index)
			if !ok || f.IsZero() {
				continue
			}
			id, err := m.Key.ID(v)
			if err != nil {
				return // not inserted (an upsert that did nothing): nothing to seed
			}
			rows = append(rows, seedRow{c, id, intOf(f)})
		}
	})
	slices.SortFunc(rows, func(a, b seedRow) int {
		return cmp.Or(cmp.Compare(a.c.RecordType, b.c.RecordType), cmp.Compare(a.id, b.id))
	})
	for _, r := range rows {
		if err := p.writes.AddOne(db, r.c.RecordType, r.id, r.c.Slots, r.n); err != nil {
			return err
		}
	}
	return nil
}

// intOf reads an integer field; unsigned values above MaxInt64 saturate.
func intOf(f reflect.Value) int64 {
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return f.Int()
	}
	return int64(min(f.Uint(), 1<<63-1))
}
