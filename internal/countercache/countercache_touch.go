package countercache

import (
	"cmp"
	"maps"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"
)

// touchField is the parent's column that gorm's UpdatedAt handling writes.
func touchField(s *schema.Schema) *schema.Field {
	for _, f := range s.Fields {
		if f.DBName != "" && f.AutoUpdateTime != 0 {
			return f
		}
	}
	return nil
}

// touchParents updates the autoUpdateTime column of every parent whose
// touched counter changed, one UPDATE per parent table, keys in ascending
// order (record_id order for string keys).
func (p *Caches) touchParents(db *gorm.DB, d deltas) error {
	type target struct {
		parent *meta.Model
		field  *schema.Field
	}
	ids := map[target]map[string]bool{}
	for k, n := range d {
		if n == 0 || k.c.touch == nil {
			continue
		}
		t := target{k.c.parent, k.c.touch}
		if ids[t] == nil {
			ids[t] = map[string]bool{}
		}
		ids[t][k.id] = true
	}
	if len(ids) == 0 {
		return nil
	}
	targets := slices.SortedFunc(maps.Keys(ids), func(a, b target) int { return cmp.Compare(a.parent.Table, b.parent.Table) })
	now := db.NowFunc()
	for _, t := range targets {
		var keys []any
		for _, id := range slices.Sorted(maps.Keys(ids[t])) {
			if k, ok := t.parent.Key.Parse(id); ok {
				keys = append(keys, k)
			}
		}
		var value any = now
		switch t.field.AutoUpdateTime {
		case schema.UnixSecond:
			value = now.Unix()
		case schema.UnixMillisecond:
			value = now.UnixMilli()
		case schema.UnixNanosecond:
			value = now.UnixNano()
		}
		err := session.Routed(db).Session(&gorm.Session{SkipHooks: true}).Table(t.parent.Table).
			Where(t.parent.Key.In("", keys)).
			UpdateColumn(t.field.DBName, value).Error
		if err != nil {
			return err
		}
	}
	return nil
}
