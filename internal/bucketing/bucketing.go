// Package bucketing is time buckets: which hour, day, ISO week or month an
// instant falls in, in a counter's zone, the labels that name them in
// record_type ("posts.views@2026-11-25"), the buckets of a window, and the
// retention (keep:) a window must stay within. It knows nothing of counters
// or SQL: a bucketed counter's writes and reads ask it for labels.
package bucketing

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slotted-go/slotted/internal/errs"
)

// Bucketed counters (`slotted:"views;buckets:day"`) count every write twice,
// in one statement: into the counter's all-time row set (record_type
// "posts.views", as for any counter) and into the current bucket's row set,
// whose record_type carries the bucket: "posts.views@2026-11-23". The schema
// does not change. A bucket's rows are a primary-key range like any counter's,
// so one record over a window is one index seek per bucket (record_type IN
// (...) AND record_id = ?), and all records of one bucket are one contiguous
// range of the key (record_type = ?): retention deletes and windowed top-N
// read nothing else.
//
// Labels are chosen so that the labels of one counter sort chronologically as
// bytes, and none of them repeats:
//
//	hour   "2026-11-23T14"    the hour's start in UTC (minutes added, "T08:30", in zones offset by half hours)
//	day    "2026-11-23"       the date in the counter's time zone
//	week   "2026-W48"         the ISO week (Monday to Sunday) in the counter's time zone, by its ISO year
//	month  "2026-11"          the month in the counter's time zone
//
// Hours are labelled in UTC because local clock hours repeat on the day
// daylight saving time ends: 01:30 EDT and 01:30 EST are two buckets.

// unit is a bucketed counter's bucket length.
type Unit int

const (
	Hourly Unit = iota + 1
	Daily
	Monthly
	Weekly // appended: the values above are compared nowhere, but keep them stable
)

func (u Unit) String() string {
	switch u {
	case Hourly:
		return "hour"
	case Daily:
		return "day"
	case Weekly:
		return "week"
	}
	return "month"
}

// MaxLabelLen is the longest label, "2006-01-02T15:04", plus its '@'.
const MaxLabelLen = 1 + len("2006-01-02T15:04")

// MaxWindowBuckets bounds the buckets one windowed read covers (CountBetween,
// Series, LoadBetween, TopBetween, OrderByBetween): 10,000 is over a year of
// hours or 27 years of days. A longer window returns errs.ErrInvalidArgument.
const MaxWindowBuckets = 10000

// Scheme is a bucketed counter's buckets: their unit, zone and retention.
type Scheme struct {
	Unit Unit
	Loc  *time.Location
	Keep int // buckets kept by MaintainBuckets, the current one included; 0 keeps all
}

// Bucket is one bucket: its label and the instants it covers, [start, end).
type Bucket struct {
	Label      string
	Start, End time.Time
}

// of returns the bucket holding instant t.
func (b *Scheme) Of(t time.Time) Bucket {
	switch b.Unit {
	case Hourly:
		// The local hour's start, by the offset in force at t; clipped to the
		// zone period holding t, for zones whose clocks move by half an hour.
		lt := t.In(b.Loc)
		_, off := lt.Zone()
		local := t.Unix() + int64(off)
		start := time.Unix(local-mod(local, 3600)-int64(off), 0).In(b.Loc)
		end := start.Add(time.Hour)
		if from, to := lt.ZoneBounds(); !from.IsZero() && start.Before(from) {
			start = from
		} else if !to.IsZero() && end.After(to) {
			end = to
		}
		u := start.UTC()
		label := u.Format("2006-01-02T15")
		if u.Minute() != 0 {
			label = u.Format("2006-01-02T15:04")
		}
		return Bucket{Label: label, Start: start, End: end}
	case Daily:
		y, m, d := t.In(b.Loc).Date()
		return Bucket{Label: fmt.Sprintf("%04d-%02d-%02d", y, m, d), Start: DayStart(y, m, d, b.Loc), End: DayStart(y, m, d+1, b.Loc)}
	case Weekly:
		return WeekOf(t, b.Loc)
	default:
		y, m, _ := t.In(b.Loc).Date()
		return Bucket{Label: fmt.Sprintf("%04d-%02d", y, m), Start: DayStart(y, m, 1, b.Loc), End: DayStart(y, m+1, 1, b.Loc)}
	}
}

// between returns the buckets that overlap [from, to), oldest first: from's
// bucket, and every bucket that starts before to; none when from == to.
func (b *Scheme) Between(from, to time.Time) ([]Bucket, error) {
	if to.Before(from) {
		return nil, fmt.Errorf("%w: window ends (%s) before it starts (%s)", errs.ErrInvalidArgument, to, from)
	}
	if from.Equal(to) {
		return nil, nil // [t, t) holds no instant: no Bucket, not the one holding t
	}
	var out []Bucket
	for cur := b.Of(from); cur.Start.Before(to); {
		if len(out) == MaxWindowBuckets {
			return nil, fmt.Errorf("%w: window %s..%s holds more than %d %s buckets", errs.ErrInvalidArgument, from, to, MaxWindowBuckets, b.Unit)
		}
		out = append(out, cur)
		next := b.Of(cur.End)
		if !next.Start.After(cur.Start) { // cannot happen in real zones; never loop
			return nil, fmt.Errorf("%w: %s buckets in %s do not advance at %s", errs.ErrInvalidArgument, b.Unit, b.Loc, cur.End)
		}
		cur = next
	}
	return out, nil
}

// back returns the bucket n buckets before cur (n >= 0).
func (b *Scheme) Back(cur Bucket, n int) Bucket {
	for ; n > 0; n-- {
		cur = b.Of(cur.Start.Add(-time.Nanosecond))
	}
	return cur
}

// valid reports whether label is a label this counter writes.
func (b *Scheme) Valid(label string) bool {
	switch b.Unit {
	case Hourly:
		layout := "2006-01-02T15"
		if len(label) > len(layout) {
			layout = "2006-01-02T15:04"
		}
		t, err := time.Parse(layout, label) // an hour's label is its start in UTC
		return err == nil && b.Of(t).Label == label
	case Daily:
		t, err := time.Parse("2006-01-02", label)
		return err == nil && t.Format("2006-01-02") == label
	case Weekly:
		return validWeek(label)
	default:
		t, err := time.Parse("2006-01", label)
		return err == nil && t.Format("2006-01") == label
	}
}

// dayStart is the first instant of a local date: midnight, or the end of the
// gap when the clocks skip midnight (daylight saving time begins at 00:00 in
// some zones). The date is normalized as time.Date does (day 32 is the next month's 1st).
func DayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	y, m, d = time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Date()
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if ty, tm, td := t.Date(); ty != y || tm != m || td != d {
		// Midnight does not exist: time.Date picked the instant before the gap,
		// on the previous day; the date begins where that zone period ends.
		_, end := t.ZoneBounds()
		t = end.In(loc)
	}
	return t
}

func mod(a, b int64) int64 { return (a%b + b) % b }

// Tag holds a tag's bucket options.
type Tag struct {
	buckets Unit
	tz      *time.Location
	keep    int
}

// Parse parses the buckets:, tz: and keep: tag options.
func (o *Tag) Parse(tag, key, value string) error {
	switch key {
	case "buckets":
		switch strings.ToLower(value) {
		case "hour":
			o.buckets = Hourly
		case "day":
			o.buckets = Daily
		case "week":
			o.buckets = Weekly
		case "month":
			o.buckets = Monthly
		default:
			return fmt.Errorf("%w: tag %q: buckets must be hour, day, week or month", errs.ErrInvalidConfig, tag)
		}
	case "tz":
		loc, err := time.LoadLocation(value)
		if err != nil || value == "" {
			return fmt.Errorf("%w: tag %q: tz %q: %v", errs.ErrInvalidConfig, tag, value, err)
		}
		o.tz = loc
	case "keep":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: tag %q: keep must be a number of buckets >= 1", errs.ErrInvalidConfig, tag)
		}
		o.keep = n
	}
	return nil
}

// bucketType is the record_type of one bucket of a counter.
func Type(recordType, label string) string { return recordType + "@" + label }

// retained refuses a window that starts before the oldest bucket keep:
// keeps at now.
func (b *Scheme) Retained(window []Bucket, now time.Time) error {
	if b.Keep == 0 || len(window) == 0 {
		return nil
	}
	oldest := b.Back(b.Of(now), b.Keep-1)
	if window[0].Start.Before(oldest.Start) {
		return fmt.Errorf("%w: the window starts at %s, the oldest of the %d %s buckets kept at %s",
			errs.ErrPastRetention, window[0].Start, b.Keep, b.Unit, oldest.Start)
	}
	return nil
}

// weekOf returns the ISO week holding t in Loc: Monday's midnight to the next
// Monday's, labelled by its ISO year and number ("2026-W01" may begin on
// 2025-12-29), so labels sort chronologically as bytes.
func WeekOf(t time.Time, loc *time.Location) Bucket {
	lt := t.In(loc)
	y, m, d := lt.Date()
	monday := d - (int(lt.Weekday())+6)%7
	iy, iw := lt.ISOWeek()
	return Bucket{Label: fmt.Sprintf("%04d-W%02d", iy, iw), Start: DayStart(y, m, monday, loc), End: DayStart(y, m, monday+7, loc)}
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
	return WeekOf(t, time.UTC).Label == label
}

// buildBucketing validates a counter's bucket options (meta.go's buildCounter).
func New(o Tag, recordType string, def *time.Location) (*Scheme, error) {
	if o.buckets == 0 {
		if o.tz != nil || o.keep != 0 {
			return nil, fmt.Errorf("%w: the tz: and Keep: options need a buckets: option too", errs.ErrInvalidConfig)
		}
		return nil, nil
	}
	if strings.Contains(recordType, "@") {
		return nil, fmt.Errorf("%w: record_type %q of a bucketed counter must not contain '@'", errs.ErrInvalidConfig, recordType)
	}
	if len(recordType)+MaxLabelLen > errs.MaxKeyLen {
		return nil, fmt.Errorf("%w: record_type %q of a bucketed counter is longer than %d bytes; set type: in the tag", errs.ErrInvalidConfig, recordType, errs.MaxKeyLen-MaxLabelLen)
	}
	b := &Scheme{Unit: o.buckets, Loc: o.tz, Keep: o.keep}
	if b.Loc == nil {
		b.Loc = def
	}
	return b, nil
}
