package meta

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/bucketing"
	"github.com/slotted-go/slotted/internal/errs"
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

// ExtraKind is what an Extra field is filled with.
type ExtraKind uint8

const (
	ExtraWindow ExtraKind = iota + 1
	ExtraSeries
	ExtraApplied
)

// Extra is one field filled beside the counters.
type Extra struct {
	Kind    ExtraKind
	Name    string // Go field name
	Counter string // the counter's name, resolved into c once every counter is built
	C       *Counter
	W       bucketing.Window
	Index   []int
}

// parseExtra recognizes a tag naming an extra field: its first part is a
// counter's name, and one of the options window:, series: or applied
// follows. ok is false for a counter's own tag.
func parseExtra(f *schema.Field, tag string, seriesType reflect.Type) (e *Extra, ok bool, err error) {
	parts := strings.Split(tag, ";")
	for _, part := range parts[1:] {
		key, value, _ := strings.Cut(strings.TrimSpace(part), ":")
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "window":
			e = &Extra{Kind: ExtraWindow}
		case "series":
			e = &Extra{Kind: ExtraSeries}
		case "applied":
			e = &Extra{Kind: ExtraApplied}
		default:
			continue
		}
		if len(parts) != 2 || strings.TrimSpace(parts[0]) == "" || strings.Contains(parts[0], ":") {
			return nil, true, fmt.Errorf("%w: tag %q: window:, series: and applied take one option after the counter's name (\"views;window:7d\")", errs.ErrInvalidConfig, tag)
		}
		e.Name, e.Counter, e.Index = f.Name, strings.TrimSpace(parts[0]), f.StructField.Index
		if e.Kind != ExtraApplied {
			if e.W, err = bucketing.ParseWindow(value); err != nil {
				return nil, true, fmt.Errorf("%w: tag %q: %v", errs.ErrInvalidConfig, tag, err)
			}
		}
		ft := f.FieldType
		switch {
		case e.Kind == ExtraWindow && (ft.Kind() < reflect.Int || ft.Kind() > reflect.Uint64 || ft.Kind() == reflect.Uintptr):
			err = fmt.Errorf("%w: tag %q: a window: field must be an integer, not %s", errs.ErrInvalidConfig, tag, ft)
		case e.Kind == ExtraSeries && ft != seriesType:
			err = fmt.Errorf("%w: tag %q: a series: field must be []slotted.Bucket, not %s", errs.ErrInvalidConfig, tag, ft)
		case e.Kind == ExtraApplied && ft.Kind() != reflect.Bool:
			err = fmt.Errorf("%w: tag %q: an applied field must be a bool, not %s", errs.ErrInvalidConfig, tag, ft)
		}
		return e, true, err
	}
	return nil, false, nil
}

// resolveExtras points every extra field at its counter; window: and
// series: need a bucketed one.
func (m *Model) resolveExtras() error {
	for _, e := range m.Extras {
		c, err := m.Counter(e.Counter)
		if err != nil {
			return fmt.Errorf("field %s: %w", e.Name, err)
		}
		if e.Kind != ExtraApplied && c.Bucket == nil {
			return fmt.Errorf("%w: field %s: counter %q has no buckets: tag option", errs.ErrInvalidConfig, e.Name, c.Name)
		}
		e.C = c
	}
	return nil
}

// In reports whether names holds the field's Go name or its counter's name.
func (e *Extra) In(names []string) bool {
	return slices.Contains(names, e.Name) || slices.Contains(names, e.Counter)
}
