package slotted

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
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

type extraKind uint8

const (
	extraWindow extraKind = iota + 1
	extraSeries
	extraApplied
)

// extraField is one field filled beside the counters.
type extraField struct {
	kind    extraKind
	name    string // Go field name
	counter string // the counter's name, resolved into c once every counter is built
	c       *counter
	w       Window
	index   []int
}

var bucketsType = reflect.TypeOf([]Bucket(nil))

// parseExtra recognizes a tag naming an extra field: its first part is a
// counter's name, and one of the options window:, series: or applied
// follows. ok is false for a counter's own tag.
func parseExtra(f *schema.Field, tag string) (e *extraField, ok bool, err error) {
	parts := strings.Split(tag, ";")
	for _, part := range parts[1:] {
		key, value, _ := strings.Cut(strings.TrimSpace(part), ":")
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "window":
			e = &extraField{kind: extraWindow}
		case "series":
			e = &extraField{kind: extraSeries}
		case "applied":
			e = &extraField{kind: extraApplied}
		default:
			continue
		}
		if len(parts) != 2 || strings.TrimSpace(parts[0]) == "" || strings.Contains(parts[0], ":") {
			return nil, true, fmt.Errorf("%w: tag %q: window:, series: and applied take one option after the counter's name (\"views;window:7d\")", ErrInvalidConfig, tag)
		}
		e.name, e.counter, e.index = f.Name, strings.TrimSpace(parts[0]), f.StructField.Index
		if e.kind != extraApplied {
			if e.w, err = ParseWindow(value); err != nil {
				return nil, true, fmt.Errorf("%w: tag %q: %v", ErrInvalidConfig, tag, err)
			}
		}
		ft := f.FieldType
		switch {
		case e.kind == extraWindow && (ft.Kind() < reflect.Int || ft.Kind() > reflect.Uint64 || ft.Kind() == reflect.Uintptr):
			err = fmt.Errorf("%w: tag %q: a window: field must be an integer, not %s", ErrInvalidConfig, tag, ft)
		case e.kind == extraSeries && ft != bucketsType:
			err = fmt.Errorf("%w: tag %q: a series: field must be []slotted.Bucket, not %s", ErrInvalidConfig, tag, ft)
		case e.kind == extraApplied && ft.Kind() != reflect.Bool:
			err = fmt.Errorf("%w: tag %q: an applied field must be a bool, not %s", ErrInvalidConfig, tag, ft)
		}
		return e, true, err
	}
	return nil, false, nil
}

// resolveExtras points every extra field at its counter; window: and
// series: need a bucketed one.
func (m *modelMeta) resolveExtras() error {
	for _, e := range m.extras {
		c, err := m.counter(e.counter)
		if err != nil {
			return fmt.Errorf("field %s: %w", e.name, err)
		}
		if e.kind != extraApplied && c.bucket == nil {
			return fmt.Errorf("%w: field %s: counter %q has no buckets: tag option", ErrInvalidConfig, e.name, c.name)
		}
		e.c = c
	}
	return nil
}

// fillExtras fills the window: and series: fields of the structs in v, and
// the applied ones when key is not "". names restricts it to those fields
// (Go names), when given.
func (p *Plugin) fillExtras(db *gorm.DB, m *modelMeta, v reflect.Value, key string, strict bool, names ...string) error {
	if len(m.extras) == 0 {
		return nil
	}
	rs, err := m.records(v, strict)
	if err != nil || len(rs.ids) == 0 {
		return err
	}
	now := p.cfg.Now()
	for _, e := range m.extras {
		if len(names) > 0 && !containsName(names, e.name, e.counter) {
			continue
		}
		switch e.kind {
		case extraApplied:
			if key == "" {
				continue
			}
			applied, err := p.appliedKeys(db, e.c.recordType, rs.ids, key)
			if err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := walk(s, e.index, true); ok && f.CanSet() {
					f.SetBool(applied[id])
				}
			})
		case extraWindow:
			buckets, err := e.w.Buckets(e.c.bucket, now)
			if err != nil {
				return fmt.Errorf("field %s: %w", e.name, err)
			}
			totals := make(map[string]int64, len(rs.ids))
			if err := p.windowSums(db, bucketTypes(e.c, buckets), rs.ids, false, totals); err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := walk(s, e.index, true); ok && f.CanSet() {
					setInt(f, totals[id])
				}
			})
		case extraSeries:
			buckets, err := e.w.Buckets(e.c.bucket, now)
			if err != nil {
				return fmt.Errorf("field %s: %w", e.name, err)
			}
			series, err := p.seriesOf(db, e.c, buckets, rs.ids)
			if err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := walk(s, e.index, true); ok && f.CanSet() {
					f.Set(reflect.ValueOf(slices.Clone(series[id]))) // records repeated in v get a series each
				}
			})
		}
	}
	return nil
}

func eachRecord(rs records, fn func(id string, s reflect.Value)) {
	for id, structs := range rs.byID {
		for _, s := range structs {
			fn(id, s)
		}
	}
}

func containsName(names []string, field, counter string) bool {
	for _, n := range names {
		if n == field || n == counter {
			return true
		}
	}
	return false
}
