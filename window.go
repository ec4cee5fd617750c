package slotted

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/slotted-go/slotted/internal/bucketing"
	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/query"
	"github.com/slotted-go/slotted/internal/tables"
	"gorm.io/gorm"
)

// Windowed reads of bucketed counters: the buckets overlapping [from, to)
// are enumerated in Go and read by their exact record_types, never by a
// range of record_type (whose order would depend on the database's
// collation). Each read is one statement per 500 buckets (and, for
// LoadBetween, per query.WindowCells/buckets records), so a window never
// degenerates into a scan of other buckets or other records.

// CountBetween returns the total of a bucketed counter over the buckets that
// overlap [from, to): the bucket holding from, up to the one holding the last
// instant before to. With from and to on bucket boundaries (midnights of the
// counter's zone for buckets:day) that is exactly the writes made in [from, to).
//
//	week, err := slotted.CountBetween(db, &post, "views", now.AddDate(0, 0, -6), now)
//	// SELECT `record_id`, SUM(`count`) FROM `slotted_counters` WHERE `record_type` IN
//	//   ('posts.views@2026-11-17',...,'posts.views@2026-11-23') AND `record_id` = '42' GROUP BY `record_id`
//
// from == to is an empty window: 0, and no statement. A window reaching past
// the keep: retention reads what is left of it; CountIn refuses such a window
// with ErrPastRetention, and takes windows stated in buckets (LastDays(7),
// ThisWeek()) instead of instants.
//
// A counter without the buckets: tag option, or a window of more than
// MaxWindowBuckets buckets, returns ErrInvalidArgument.
func CountBetween(db *gorm.DB, model any, counter string, from, to time.Time) (int64, error) {
	return countWindow(db, model, counter, between(from, to))
}

// Series returns a bucketed counter's buckets that overlap [from, to),
// oldest first, with 0 for buckets without writes.
//
//	days, err := slotted.Series(db, &post, "views", now.AddDate(0, 0, -6), now)
//	// SELECT `record_type`, SUM(`count`) FROM `slotted_counters` WHERE `record_type` IN
//	//   ('posts.views@2026-11-17',...) AND `record_id` = '42' GROUP BY `record_type`
//	// days[6].Start is today's midnight, days[6].Count today's views
func Series(db *gorm.DB, model any, counter string, from, to time.Time) ([]Bucket, error) {
	return seriesWindow(db, model, counter, between(from, to))
}

// LoadBetween is Load for a window: it sets the named bucketed counters (all
// of the model's bucketed counters when none are named) of every record in
// models to their totals over the buckets overlapping [from, to), as
// CountBetween reads them, with one statement per counter and 1000 records
// (fewer records per statement for windows of more than 10 buckets) rather
// than one per record.
//
//	slotted.LoadBetween(db, &posts, weekAgo, now, "views") // posts[i].Views: this week's views
//	// SELECT `record_id`, SUM(`count`) FROM `slotted_counters` WHERE `record_type` IN (...7 days...)
//	//   AND `record_id` IN ('1','2','3') GROUP BY `record_id`
func LoadBetween(db *gorm.DB, models any, from, to time.Time, counters ...string) error {
	return loadWindow(db, models, counters, between(from, to))
}

// window resolves a windowed read of one record's counter.
func window(db *gorm.DB, model any, counter string, resolve windowOf) (p *Plugin, c *meta.Counter, id string, buckets []bucketing.Bucket, err error) {
	if p, err = pluginOf(db); err != nil {
		return
	}
	if c, _, id, err = p.models.Target(db, model, counter); err != nil {
		return
	}
	if c.Bucket == nil {
		err = meta.NotBucketed(c)
		return
	}
	buckets, err = resolve(c, p.cfg.Now)
	return
}

// windowOf names a window's buckets for a bucketed counter: the instant form
// (between) and the Window form (windowIn) of every windowed read. Only the
// Window form reads the clock (Config.Now, the user's function: called only
// when a window needs it, once per call).
type windowOf func(c *meta.Counter, now func() time.Time) ([]bucketing.Bucket, error)

// between is the instant form: the buckets overlapping [from, to).
func between(from, to time.Time) windowOf {
	return func(c *meta.Counter, _ func() time.Time) ([]bucketing.Bucket, error) {
		return c.Bucket.Between(from, to)
	}
}

// countWindow is CountBetween and CountIn: one record's counter over a window
// (0 and no statement for an empty one).
func countWindow(db *gorm.DB, model any, counter string, resolve windowOf) (int64, error) {
	p, c, id, buckets, err := window(db, model, counter, resolve)
	if err != nil || len(buckets) == 0 {
		return 0, err
	}
	totals := map[string]int64{}
	if err := p.reads.WindowSums(db, c.BucketTypes(buckets), []string{id}, false, totals); err != nil {
		return 0, err
	}
	return totals[id], nil
}

// seriesWindow is Series and SeriesIn: one record's buckets over a window.
func seriesWindow(db *gorm.DB, model any, counter string, resolve windowOf) ([]Bucket, error) {
	p, c, id, buckets, err := window(db, model, counter, resolve)
	if err != nil {
		return nil, err
	}
	types := c.BucketTypes(buckets)
	totals := map[string]int64{}
	if err := p.reads.WindowSums(db, types, []string{id}, true, totals); err != nil {
		return nil, err
	}
	out := make([]Bucket, len(buckets))
	for i, b := range buckets {
		out[i] = Bucket{Start: b.Start, End: b.End, Count: totals[types[i]]}
	}
	return out, nil
}

// loadWindow is LoadBetween and LoadIn: the named bucketed counters of many
// records over a window, one statement per counter and 1000 records.
func loadWindow(db *gorm.DB, models any, counters []string, resolve windowOf) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	selected, err := m.Bucketed(counters)
	if err != nil {
		return err
	}
	now := sync.OnceValue(p.cfg.Now) // one reading for all the counters
	windows := make([][]bucketing.Bucket, len(selected))
	for i, c := range selected {
		if windows[i], err = resolve(c, now); err != nil {
			return err
		}
	}
	rs, err := m.Records(elem, true)
	if err != nil || len(rs.IDs) == 0 {
		return err
	}
	for i, c := range selected {
		totals := make(map[string]int64, len(rs.IDs))
		if err := p.reads.WindowSums(db, c.BucketTypes(windows[i]), rs.IDs, false, totals); err != nil {
			return err
		}
		for id, structs := range rs.ByID {
			for _, s := range structs {
				c.Set(s, totals[id])
			}
		}
	}
	return nil
}

// Windows stated in buckets. CountBetween(from, to) takes every bucket that
// [from, to) overlaps, so "the last 7 days" written as now.AddDate(0, 0, -7)..now
// is 8 day buckets, and getting 7 takes day arithmetic in the counter's zone.
// A Window names the period instead (Today, LastDays(7), ThisWeek, ...); it
// is resolved against Config.Now in the counter's own zone (tz:, else
// Config.Location), and must be made of whole buckets of the counter:
// LastHours on a day counter, or ThisWeek on a month counter, returns
// ErrInvalidArgument rather than a count of some other period.

// MaxWindowBuckets bounds the buckets one windowed read covers (CountBetween,
// Series, LoadBetween, TopBetween, OrderByBetween): 10,000 is over a year of
// hours or 27 years of days. A longer window returns ErrInvalidArgument.
const MaxWindowBuckets = bucketing.MaxWindowBuckets

// ErrPastRetention: a window starts before the oldest bucket a counter with the keep:N tag option keeps
// (the N most recent, the current one included). MaintainBuckets deletes older buckets, so their count
// would read 0, or a part of what was written, depending on when it last ran. It wraps ErrInvalidArgument.
var ErrPastRetention = errs.ErrPastRetention

// Window is a period of a bucketed counter stated in its buckets, resolved
// when it is read: at Config.Now, in the counter's time zone. The zero Window
// is invalid. Windows that are calendar periods (Today, ThisWeek, ThisMonth)
// are whole, so buckets after now are in them and read 0; the Last* windows
// end with the bucket holding now, which is counted as far as it has gone.
type Window = bucketing.Window

// Today is the counter's current day, midnight to midnight in its zone (23
// or 25 hours on the days daylight saving time begins or ends).
func Today() Window { return bucketing.Today() }

// LastDays is the n days ending with today, today included: LastDays(7) on
// a Sunday is Monday to Sunday. n must be 1..MaxWindowBuckets.
func LastDays(n int) Window { return bucketing.LastDays(n) }

// LastHours is the n hours ending with the current one (of an hour counter),
// the current one included. n must be 1..MaxWindowBuckets.
func LastHours(n int) Window { return bucketing.LastHours(n) }

// ThisWeek is the current ISO week, Monday 00:00 to the next Monday 00:00 in
// the counter's zone.
func ThisWeek() Window { return bucketing.ThisWeek() }

// ThisMonth is the current calendar month in the counter's zone.
func ThisMonth() Window { return bucketing.ThisMonth() }

// LastBuckets is the n most recent buckets of the counter, whatever its
// unit, the current one included. n must be 1..MaxWindowBuckets.
func LastBuckets(n int) Window { return bucketing.LastBuckets(n) }

// ParseWindow reads a window as Window.String writes it (the window: and
// series: tag options use it): "today", "week", "month", or a number followed
// by d (LastDays), h (LastHours) or b (LastBuckets).
func ParseWindow(s string) (Window, error) { return bucketing.ParseWindow(s) }

// windowIn is w as a windowOf (window.go): its buckets for counter c at now.
func windowIn(w Window) windowOf {
	return func(c *meta.Counter, now func() time.Time) ([]bucketing.Bucket, error) {
		return w.Buckets(c.Bucket, now())
	}
}

// CountIn returns a bucketed counter's total over window w, read at
// Config.Now in the counter's zone:
//
//	week, err := slotted.CountIn(db, &post, "views", slotted.LastDays(7))
//	// SELECT `record_id`, SUM(`count`) FROM `slotted_counters` WHERE `record_type` IN
//	//   ('posts.views@2026-11-19',...,'posts.views@2026-11-25') AND `record_id` = '42' GROUP BY `record_id`
//
// It returns ErrInvalidArgument for a counter without buckets: or a window
// that is not made of its whole buckets, and ErrPastRetention for a window
// reaching past keep:.
func CountIn(db *gorm.DB, model any, counter string, w Window) (int64, error) {
	return countWindow(db, model, counter, windowIn(w))
}

// SeriesIn returns a bucketed counter's buckets in window w, oldest first,
// with 0 for buckets without writes: LastDays(7) is 7 buckets of a day
// counter, 168 of an hour counter (167 or 169 over a change of daylight
// saving time).
//
//	days, err := slotted.SeriesIn(db, &post, "views", slotted.LastDays(7))
//	// days[6] is today
func SeriesIn(db *gorm.DB, model any, counter string, w Window) ([]Bucket, error) {
	return seriesWindow(db, model, counter, windowIn(w))
}

// LoadIn is LoadBetween for a window: it sets the named bucketed counters
// (all bucketed ones when none are named) of every record in models to their
// totals over w, one statement per counter and 1000 records. To keep the
// all-time total in the counter field, load the window into a field of its
// own instead (the window: tag option, LoadWindows).
//
//	slotted.LoadIn(db, &posts, slotted.ThisWeek(), "views")
func LoadIn(db *gorm.DB, models any, w Window, counters ...string) error {
	// A Window's error names the counter: several may be loaded at once.
	return loadWindow(db, models, counters, func(c *meta.Counter, now func() time.Time) ([]bucketing.Bucket, error) {
		buckets, err := windowIn(w)(c, now)
		if err != nil {
			return nil, fmt.Errorf("counter %q: %w", c.Name, err)
		}
		return buckets, nil
	})
}

// Dashboards: the series of many records in one statement, and windows in
// fields of their own (window.go), so a page of 20 posts with a 7-day
// sparkline each is one query, not 20.

// SeriesMany returns the series of counter over window w for every record
// in models (a slice or array of structs or pointers, or a pointer to one),
// in the order the records appear there: out[i] is models[i]'s, oldest bucket
// first, 0 where nothing was written. One statement reads 1000 records' worth
// of buckets × records cells (10,000 cells at most), not one per record.
// A nil pointer among models is ErrUnsupportedModel.
//
//	series, err := slotted.SeriesMany(db, &posts, "views", slotted.LastDays(7))
//	// SELECT `record_type`,`record_id`,SUM(`count`) FROM `slotted_counters`
//	//   WHERE `record_type` IN ('posts.views@2026-11-19',...) AND `record_id` IN ('1',...,'20')
//	//   GROUP BY `record_type`,`record_id`
//	// series[3][6].Count: posts[3]'s views today
func SeriesMany(db *gorm.DB, models any, counter string, w Window) ([][]Bucket, error) {
	p, err := pluginOf(db)
	if err != nil {
		return nil, err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return nil, err
	}
	cs, err := m.Bucketed([]string{counter})
	if err != nil {
		return nil, err
	}
	c := cs[0]
	buckets, err := w.Buckets(c.Bucket, p.cfg.Now())
	if err != nil {
		return nil, err
	}
	if err := noNilElems(elem); err != nil {
		return nil, err
	}
	rs, err := m.Records(elem, true)
	if err != nil {
		return nil, err
	}
	series, err := p.seriesOf(db, c, buckets, rs.IDs)
	if err != nil {
		return nil, err
	}
	var out [][]Bucket
	meta.EachStruct(elem, func(s reflect.Value) {
		id, _ := m.Key.ID(s) // records checked every key
		out = append(out, slices.Clone(series[id]))
	})
	return out, nil
}

// LoadWindows fills the window: and series: fields (window.go) of every
// record in models, the named ones (Go field or counter names) or all, as
// auto-fill does after a query: one statement per field and 1000 records. A
// name that matches no window: or series: field is ErrUnknownCounter.
//
//	type Post struct {
//		ID        uint
//		Views     int64            `gorm:"-" slotted:"views;buckets:day"`
//		ViewsWeek int64            `gorm:"-" slotted:"views;window:7d"`
//		Spark     []slotted.Bucket `gorm:"-" slotted:"views;series:7d"`
//	}
//	slotted.LoadWindows(db, &posts) // ViewsWeek and Spark of 20 posts: 2 statements; Views keeps the all-time total
func LoadWindows(db *gorm.DB, models any, fields ...string) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	if err := m.ExtrasNamed(fields, meta.ExtraWindow, meta.ExtraSeries); err != nil {
		return err
	}
	return p.fillExtras(db, m, elem, "", true, fields...)
}

// noNilElems refuses a nil pointer among the records of a call whose answer
// is by position (out[i] is models[i]'s): skipping it, as Load does, would
// shift every answer after it onto the wrong record.
func noNilElems(v reflect.Value) error {
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil
	}
	for i := range v.Len() {
		if e := v.Index(i); (e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface) && e.IsNil() {
			return fmt.Errorf("%w: models[%d] is nil", ErrUnsupportedModel, i)
		}
	}
	return nil
}

// seriesOf reads counter c's buckets for the records ids: one GROUP BY
// record_type, record_id per chunk of query.WindowCells cells.
func (p *Plugin) seriesOf(db *gorm.DB, c *meta.Counter, buckets []bucketing.Bucket, ids []string) (map[string][]Bucket, error) {
	types := c.BucketTypes(buckets)
	cells := make(map[[2]string]int64, len(types))
	for tchunk := range slices.Chunk(types, query.TypeChunk) {
		for ichunk := range slices.Chunk(ids, max(1, min(tables.LoadChunk, query.WindowCells/len(tchunk)))) {
			if err := p.reads.Sums(db, query.Anys(tchunk), ichunk, cells); err != nil {
				return nil, err
			}
		}
	}
	out := make(map[string][]Bucket, len(ids))
	for _, id := range ids {
		s := make([]Bucket, len(buckets))
		for i, b := range buckets {
			s[i] = Bucket{Start: b.Start, End: b.End, Count: cells[[2]string{types[i], id}]}
		}
		out[id] = s
	}
	return out, nil
}

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

// Bucket is one bucket of a Series: the count of the writes made in [Start, End).
type Bucket struct {
	Start, End time.Time // in the counter's time zone
	Count      int64
}
