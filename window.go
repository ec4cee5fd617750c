package slotted

import (
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/bucketing"

	"github.com/slotted-go/slotted/internal/meta"
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
