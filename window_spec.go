package slotted

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Windows stated in buckets. CountBetween(from, to) takes every bucket that
// [from, to) overlaps, so "the last 7 days" written as now.AddDate(0, 0, -7)..now
// is 8 day buckets, and getting 7 takes day arithmetic in the counter's zone.
// A Window names the period instead (Today, LastDays(7), ThisWeek, ...); it
// is resolved against Config.Now in the counter's own zone (tz:, else
// Config.Location), and must be made of whole buckets of the counter:
// LastHours on a day counter, or ThisWeek on a month counter, returns
// ErrInvalidArgument rather than a count of some other period.

// ErrPastRetention: a window starts before the oldest bucket a counter with the keep:N tag option keeps
// (the N most recent, the current one included). MaintainBuckets deletes older buckets, so their count
// would read 0, or a part of what was written, depending on when it last ran. It wraps ErrInvalidArgument.
var ErrPastRetention = fmt.Errorf("%w: the window reaches past the counter's keep: retention", ErrInvalidArgument)

type windowKind uint8

const (
	winToday windowKind = iota + 1
	winDays
	winHours
	winWeek
	winMonth
	winBuckets
)

// Window is a period of a bucketed counter stated in its buckets, resolved
// when it is read: at Config.Now, in the counter's time zone. The zero Window
// is invalid. Windows that are calendar periods (Today, ThisWeek, ThisMonth)
// are whole, so buckets after now are in them and read 0; the Last* windows
// end with the bucket holding now, which is counted as far as it has gone.
type Window struct {
	kind windowKind
	n    int
}

// Today is the counter's current day, midnight to midnight in its zone (23
// or 25 hours on the days daylight saving time begins or ends).
func Today() Window { return Window{kind: winToday, n: 1} }

// LastDays is the n days ending with today, today included: LastDays(7) on
// a Sunday is Monday to Sunday. n must be 1..MaxWindowBuckets.
func LastDays(n int) Window { return Window{kind: winDays, n: n} }

// LastHours is the n hours ending with the current one (of an hour counter),
// the current one included. n must be 1..MaxWindowBuckets.
func LastHours(n int) Window { return Window{kind: winHours, n: n} }

// ThisWeek is the current ISO week, Monday 00:00 to the next Monday 00:00 in
// the counter's zone.
func ThisWeek() Window { return Window{kind: winWeek, n: 1} }

// ThisMonth is the current calendar month in the counter's zone.
func ThisMonth() Window { return Window{kind: winMonth, n: 1} }

// LastBuckets is the n most recent buckets of the counter, whatever its
// unit, the current one included. n must be 1..MaxWindowBuckets.
func LastBuckets(n int) Window { return Window{kind: winBuckets, n: n} }

// String returns the window in the form ParseWindow reads: "today", "7d",
// "24h", "week", "month", "30b".
func (w Window) String() string {
	switch w.kind {
	case winToday:
		return "today"
	case winDays:
		return strconv.Itoa(w.n) + "d"
	case winHours:
		return strconv.Itoa(w.n) + "h"
	case winWeek:
		return "week"
	case winMonth:
		return "month"
	case winBuckets:
		return strconv.Itoa(w.n) + "b"
	}
	return "invalid"
}

// ParseWindow reads a window as String writes it (the window: and series:
// tag options use it): "today", "week", "month", or a number followed by d
// (LastDays), h (LastHours) or b (LastBuckets).
func ParseWindow(s string) (Window, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "today":
		return Today(), nil
	case "week":
		return ThisWeek(), nil
	case "month":
		return ThisMonth(), nil
	}
	s = strings.TrimSpace(s)
	if len(s) >= 2 {
		n, err := strconv.Atoi(s[:len(s)-1])
		if err == nil && n >= 1 && n <= MaxWindowBuckets {
			switch s[len(s)-1] {
			case 'd', 'D':
				return LastDays(n), nil
			case 'h', 'H':
				return LastHours(n), nil
			case 'b', 'B':
				return LastBuckets(n), nil
			}
		}
	}
	return Window{}, fmt.Errorf("%w: window %q (want today, week, month, or Nd, Nh, Nb with N in 1..%d)", ErrInvalidArgument, s, MaxWindowBuckets)
}

// of is w as a windowOf (window.go): its buckets for counter c at now.
func (w Window) of(c *counter, now func() time.Time) ([]bucket, error) {
	return w.buckets(c.bucket, now())
}

// buckets resolves the window for a counter at now: its buckets, oldest
// first, or ErrInvalidArgument when they are not whole buckets of the
// counter, or ErrPastRetention.
func (w Window) buckets(b *bucketing, now time.Time) ([]bucket, error) {
	if w.kind == 0 {
		return nil, fmt.Errorf("%w: the zero Window", ErrInvalidArgument)
	}
	if w.n < 1 || w.n > MaxWindowBuckets {
		return nil, fmt.Errorf("%w: window %s: n must be 1..%d", ErrInvalidArgument, w, MaxWindowBuckets)
	}
	y, m, d := now.In(b.loc).Date()
	var from, to time.Time
	switch w.kind {
	case winToday:
		from, to = dayStart(y, m, d, b.loc), dayStart(y, m, d+1, b.loc)
	case winDays:
		from, to = dayStart(y, m, d-w.n+1, b.loc), dayStart(y, m, d+1, b.loc)
	case winWeek:
		wk := weekOf(now, b.loc)
		from, to = wk.start, wk.end
	case winMonth:
		from, to = dayStart(y, m, 1, b.loc), dayStart(y, m+1, 1, b.loc)
	case winHours, winBuckets:
		unit := b
		if w.kind == winHours {
			unit = &bucketing{unit: hourly, loc: b.loc}
		}
		cur := unit.of(now)
		from, to = unit.back(cur, w.n-1).start, cur.end
	}
	if b.of(from).start.Compare(from) != 0 || b.of(to).start.Compare(to) != 0 {
		return nil, fmt.Errorf("%w: window %s is not made of whole %s buckets", ErrInvalidArgument, w, b.unit)
	}
	out, err := b.between(from, to)
	if err != nil {
		return nil, err
	}
	return out, b.retained(out, now)
}

// retained refuses a window that starts before the oldest bucket keep:
// keeps at now.
func (b *bucketing) retained(window []bucket, now time.Time) error {
	if b.keep == 0 || len(window) == 0 {
		return nil
	}
	oldest := b.back(b.of(now), b.keep-1)
	if window[0].start.Before(oldest.start) {
		return fmt.Errorf("%w: the window starts at %s, the oldest of the %d %s buckets kept at %s",
			ErrPastRetention, window[0].start, b.keep, b.unit, oldest.start)
	}
	return nil
}

// weekOf returns the ISO week holding t in loc: Monday's midnight to the next
// Monday's, labelled by its ISO year and number ("2026-W01" may begin on
// 2025-12-29), so labels sort chronologically as bytes.
func weekOf(t time.Time, loc *time.Location) bucket {
	lt := t.In(loc)
	y, m, d := lt.Date()
	monday := d - (int(lt.Weekday())+6)%7
	iy, iw := lt.ISOWeek()
	return bucket{label: fmt.Sprintf("%04d-W%02d", iy, iw), start: dayStart(y, m, monday, loc), end: dayStart(y, m, monday+7, loc)}
}

// validWeek reports whether label is an ISO week label weekOf writes.
func validWeek(label string) bool {
	ys, ws, ok := strings.Cut(label, "-W")
	if !ok || len(ys) != 4 || len(ws) != 2 {
		return false
	}
	y, err1 := strconv.Atoi(ys)
	w, err2 := strconv.Atoi(ws)
	if err1 != nil || err2 != nil || w < 1 || w > 53 {
		return false
	}
	// January 4th is always in week 1; that week's Monday plus w-1 weeks.
	jan4 := time.Date(y, time.January, 4, 12, 0, 0, 0, time.UTC)
	t := jan4.AddDate(0, 0, 7*(w-1)-(int(jan4.Weekday())+6)%7)
	return weekOf(t, time.UTC).label == label
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
	return countWindow(db, model, counter, w.of)
}

// SeriesIn returns a bucketed counter's buckets in window w, oldest first,
// with 0 for buckets without writes: LastDays(7) is 7 buckets of a day
// counter, 168 of an hour counter (167 or 169 over a change of daylight
// saving time).
//
//	days, err := slotted.SeriesIn(db, &post, "views", slotted.LastDays(7))
//	// days[6] is today
func SeriesIn(db *gorm.DB, model any, counter string, w Window) ([]Bucket, error) {
	return seriesWindow(db, model, counter, w.of)
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
	return loadWindow(db, models, counters, func(c *counter, now func() time.Time) ([]bucket, error) {
		buckets, err := w.of(c, now)
		if err != nil {
			return nil, fmt.Errorf("counter %q: %w", c.name, err)
		}
		return buckets, nil
	})
}
