package slotted

import (
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/bucketing"
	"github.com/slotted-go/slotted/internal/errs"

	"github.com/slotted-go/slotted/internal/meta"
)

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
