package slotted

import (
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"
)

// Fields filled beside a model's counters, named by a tag that points at one
// of its counters:
//
//	Views     int64            `gorm:"-" slotted:"views;buckets:day"`    // the counter: all-time total
//	ViewsWeek int64            `gorm:"-" slotted:"views;window:7d"`      // its last 7 days (LoadWindows, auto-fill)
//	Spark     []slotted.Bucket `gorm:"-" slotted:"views;series:7d"`      // its last 7 days, day by day
//	Liked     bool             `gorm:"-" slotted:"likes;applied"`        // AddOnce's key applied (LoadApplied, WithOnceKey)
//
// They are not counters: writes ignore them, and Load and LoadBetween leave
// them alone. Auto-fill fills window: and series: fields with one statement
// per field and 1000 records (fewer for long series), and applied fields when
// the query's *gorm.DB carries a key (WithOnceKey).

// fillExtras fills the window: and series: fields of the structs in v, and
// the applied ones when key is not "". names restricts it to those fields
// (Go names), when given.
func (p *Plugin) fillExtras(db *gorm.DB, m *meta.Model, v reflect.Value, key string, strict bool, names ...string) error {
	if len(m.Extras) == 0 {
		return nil
	}
	rs, err := m.Records(v, strict)
	if err != nil || len(rs.IDs) == 0 {
		return err
	}
	now := p.cfg.Now()
	for _, e := range m.Extras {
		if len(names) > 0 && !e.In(names) {
			continue
		}
		switch e.Kind {
		case meta.ExtraApplied:
			if key == "" {
				continue
			}
			applied, err := p.reads.AppliedKeys(db, e.C.RecordType, rs.IDs, key)
			if err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := meta.Walk(s, e.Index, true); ok && f.CanSet() {
					f.SetBool(applied[id])
				}
			})
		case meta.ExtraWindow:
			buckets, err := e.W.Buckets(e.C.Bucket, now)
			if err != nil {
				return fmt.Errorf("field %s: %w", e.Name, err)
			}
			totals := make(map[string]int64, len(rs.IDs))
			if err := p.reads.WindowSums(db, e.C.BucketTypes(buckets), rs.IDs, false, totals); err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := meta.Walk(s, e.Index, true); ok && f.CanSet() {
					meta.SetInt(f, totals[id])
				}
			})
		case meta.ExtraSeries:
			buckets, err := e.W.Buckets(e.C.Bucket, now)
			if err != nil {
				return fmt.Errorf("field %s: %w", e.Name, err)
			}
			series, err := p.seriesOf(db, e.C, buckets, rs.IDs)
			if err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := meta.Walk(s, e.Index, true); ok && f.CanSet() {
					f.Set(reflect.ValueOf(slices.Clone(series[id]))) // records repeated in v get a series each
				}
			})
		}
	}
	return nil
}

func eachRecord(rs meta.Records, fn func(id string, s reflect.Value)) {
	for id, structs := range rs.ByID {
		for _, s := range structs {
			fn(id, s)
		}
	}
}
