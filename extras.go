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

type XExtraKind uint8

const (
	XExtraWindow XExtraKind = iota + 1
	XExtraSeries
	XExtraApplied
)

// XExtra is one field filled beside the counters.
type XExtra struct {
	Kind    XExtraKind
	Name    string // Go field name
	Counter string // the counter's name, resolved into c once every counter is built
	C       *XCounter
	W       Window
	Index   []int
}

var bucketsType = reflect.TypeOf([]Bucket(nil))

// parseExtra recognizes a tag naming an extra field: its first part is a
// counter's name, and one of the options window:, series: or applied
// follows. ok is false for a counter's own tag.
func parseExtra(f *schema.Field, tag string) (e *XExtra, ok bool, err error) {
	parts := strings.Split(tag, ";")
	for _, part := range parts[1:] {
		key, value, _ := strings.Cut(strings.TrimSpace(part), ":")
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "window":
			e = &XExtra{Kind: XExtraWindow}
		case "series":
			e = &XExtra{Kind: XExtraSeries}
		case "applied":
			e = &XExtra{Kind: XExtraApplied}
		default:
			continue
		}
		if len(parts) != 2 || strings.TrimSpace(parts[0]) == "" || strings.Contains(parts[0], ":") {
			return nil, true, fmt.Errorf("%w: tag %q: window:, series: and applied take one option after the counter's name (\"views;window:7d\")", ErrInvalidConfig, tag)
		}
		e.Name, e.Counter, e.Index = f.Name, strings.TrimSpace(parts[0]), f.StructField.Index
		if e.Kind != XExtraApplied {
			if e.W, err = ParseWindow(value); err != nil {
				return nil, true, fmt.Errorf("%w: tag %q: %v", ErrInvalidConfig, tag, err)
			}
		}
		ft := f.FieldType
		switch {
		case e.Kind == XExtraWindow && (ft.Kind() < reflect.Int || ft.Kind() > reflect.Uint64 || ft.Kind() == reflect.Uintptr):
			err = fmt.Errorf("%w: tag %q: a window: field must be an integer, not %s", ErrInvalidConfig, tag, ft)
		case e.Kind == XExtraSeries && ft != bucketsType:
			err = fmt.Errorf("%w: tag %q: a series: field must be []slotted.Bucket, not %s", ErrInvalidConfig, tag, ft)
		case e.Kind == XExtraApplied && ft.Kind() != reflect.Bool:
			err = fmt.Errorf("%w: tag %q: an applied field must be a bool, not %s", ErrInvalidConfig, tag, ft)
		}
		return e, true, err
	}
	return nil, false, nil
}

// resolveExtras points every extra field at its counter; window: and
// series: need a bucketed one.
func (m *XModel) resolveExtras() error {
	for _, e := range m.Extras {
		c, err := m.Counter(e.Counter)
		if err != nil {
			return fmt.Errorf("field %s: %w", e.Name, err)
		}
		if e.Kind != XExtraApplied && c.Bucket == nil {
			return fmt.Errorf("%w: field %s: counter %q has no buckets: tag option", ErrInvalidConfig, e.Name, c.Name)
		}
		e.C = c
	}
	return nil
}

// fillExtras fills the window: and series: fields of the structs in v, and
// the applied ones when key is not "". names restricts it to those fields
// (Go names), when given.
func (p *Plugin) fillExtras(db *gorm.DB, m *XModel, v reflect.Value, key string, strict bool, names ...string) error {
	if len(m.Extras) == 0 {
		return nil
	}
	rs, err := m.Records(v, strict)
	if err != nil || len(rs.IDs) == 0 {
		return err
	}
	now := p.cfg.Now()
	for _, e := range m.Extras {
		if len(names) > 0 && !containsName(names, e.Name, e.Counter) {
			continue
		}
		switch e.Kind {
		case XExtraApplied:
			if key == "" {
				continue
			}
			applied, err := p.appliedKeys(db, e.C.RecordType, rs.IDs, key)
			if err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := walk(s, e.Index, true); ok && f.CanSet() {
					f.SetBool(applied[id])
				}
			})
		case XExtraWindow:
			buckets, err := e.W.Buckets(e.C.Bucket, now)
			if err != nil {
				return fmt.Errorf("field %s: %w", e.Name, err)
			}
			totals := make(map[string]int64, len(rs.IDs))
			if err := p.windowSums(db, bucketTypes(e.C, buckets), rs.IDs, false, totals); err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := walk(s, e.Index, true); ok && f.CanSet() {
					XSetInt(f, totals[id])
				}
			})
		case XExtraSeries:
			buckets, err := e.W.Buckets(e.C.Bucket, now)
			if err != nil {
				return fmt.Errorf("field %s: %w", e.Name, err)
			}
			series, err := p.seriesOf(db, e.C, buckets, rs.IDs)
			if err != nil {
				return err
			}
			eachRecord(rs, func(id string, s reflect.Value) {
				if f, ok := walk(s, e.Index, true); ok && f.CanSet() {
					f.Set(reflect.ValueOf(slices.Clone(series[id]))) // records repeated in v get a series each
				}
			})
		}
	}
	return nil
}

func eachRecord(rs XRecords, fn func(id string, s reflect.Value)) {
	for id, structs := range rs.ByID {
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
