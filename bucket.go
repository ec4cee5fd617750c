package slotted

import (
	"fmt"
	"strconv"
	"strings"
	"time"
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
type unit int

const (
	hourly unit = iota + 1
	daily
	monthly
	weekly // appended: the values above are compared nowhere, but keep them stable
)

func (u unit) String() string {
	switch u {
	case hourly:
		return "hour"
	case daily:
		return "day"
	case weekly:
		return "week"
	}
	return "month"
}

// maxLabelLen is the longest label, "2006-01-02T15:04", plus its '@'.
const maxLabelLen = 1 + len("2006-01-02T15:04")

// MaxWindowBuckets bounds the buckets one windowed read covers (CountBetween,
// Series, LoadBetween, TopBetween, OrderByBetween): 10,000 is over a year of
// hours or 27 years of days. A longer window returns ErrInvalidArgument.
const MaxWindowBuckets = 10000

// bucketing is a bucketed counter's configuration.
type bucketing struct {
	unit unit
	loc  *time.Location
	keep int // buckets kept by MaintainBuckets, the current one included; 0 keeps all
}

// bucket is one bucket: its label and the instants it covers, [start, end).
type bucket struct {
	label      string
	start, end time.Time
}

// of returns the bucket holding instant t.
func (b *bucketing) of(t time.Time) bucket {
	switch b.unit {
	case hourly:
		// The local hour's start, by the offset in force at t; clipped to the
		// zone period holding t, for zones whose clocks move by half an hour.
		lt := t.In(b.loc)
		_, off := lt.Zone()
		local := t.Unix() + int64(off)
		start := time.Unix(local-mod(local, 3600)-int64(off), 0).In(b.loc)
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
		return bucket{label: label, start: start, end: end}
	case daily:
		y, m, d := t.In(b.loc).Date()
		return bucket{label: fmt.Sprintf("%04d-%02d-%02d", y, m, d), start: dayStart(y, m, d, b.loc), end: dayStart(y, m, d+1, b.loc)}
	case weekly:
		return weekOf(t, b.loc)
	default:
		y, m, _ := t.In(b.loc).Date()
		return bucket{label: fmt.Sprintf("%04d-%02d", y, m), start: dayStart(y, m, 1, b.loc), end: dayStart(y, m+1, 1, b.loc)}
	}
}

// between returns the buckets that overlap [from, to), oldest first: from's
// bucket, and every bucket that starts before to; none when from == to.
func (b *bucketing) between(from, to time.Time) ([]bucket, error) {
	if to.Before(from) {
		return nil, fmt.Errorf("%w: window ends (%s) before it starts (%s)", ErrInvalidArgument, to, from)
	}
	if from.Equal(to) {
		return nil, nil // [t, t) holds no instant: no bucket, not the one holding t
	}
	var out []bucket
	for cur := b.of(from); cur.start.Before(to); {
		if len(out) == MaxWindowBuckets {
			return nil, fmt.Errorf("%w: window %s..%s holds more than %d %s buckets", ErrInvalidArgument, from, to, MaxWindowBuckets, b.unit)
		}
		out = append(out, cur)
		next := b.of(cur.end)
		if !next.start.After(cur.start) { // cannot happen in real zones; never loop
			return nil, fmt.Errorf("%w: %s buckets in %s do not advance at %s", ErrInvalidArgument, b.unit, b.loc, cur.end)
		}
		cur = next
	}
	return out, nil
}

// back returns the bucket n buckets before cur (n >= 0).
func (b *bucketing) back(cur bucket, n int) bucket {
	for ; n > 0; n-- {
		cur = b.of(cur.start.Add(-time.Nanosecond))
	}
	return cur
}

// valid reports whether label is a label this counter writes.
func (b *bucketing) valid(label string) bool {
	switch b.unit {
	case hourly:
		layout := "2006-01-02T15"
		if len(label) > len(layout) {
			layout = "2006-01-02T15:04"
		}
		t, err := time.Parse(layout, label) // an hour's label is its start in UTC
		return err == nil && b.of(t).label == label
	case daily:
		t, err := time.Parse("2006-01-02", label)
		return err == nil && t.Format("2006-01-02") == label
	case weekly:
		return validWeek(label)
	default:
		t, err := time.Parse("2006-01", label)
		return err == nil && t.Format("2006-01") == label
	}
}

// dayStart is the first instant of a local date: midnight, or the end of the
// gap when the clocks skip midnight (daylight saving time begins at 00:00 in
// some zones). The date is normalized as time.Date does (day 32 is the next month's 1st).
func dayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
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

// bucketTag holds a tag's bucket options.
type bucketTag struct {
	buckets unit
	tz      *time.Location
	keep    int
}

// parseBucketOption parses the buckets:, tz: and keep: tag options.
func (o *bucketTag) parseBucketOption(tag, key, value string) error {
	switch key {
	case "buckets":
		switch strings.ToLower(value) {
		case "hour":
			o.buckets = hourly
		case "day":
			o.buckets = daily
		case "week":
			o.buckets = weekly
		case "month":
			o.buckets = monthly
		default:
			return fmt.Errorf("%w: tag %q: buckets must be hour, day, week or month", ErrInvalidConfig, tag)
		}
	case "tz":
		loc, err := time.LoadLocation(value)
		if err != nil || value == "" {
			return fmt.Errorf("%w: tag %q: tz %q: %v", ErrInvalidConfig, tag, value, err)
		}
		o.tz = loc
	case "keep":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: tag %q: keep must be a number of buckets >= 1", ErrInvalidConfig, tag)
		}
		o.keep = n
	}
	return nil
}

// buildBucketing validates a counter's bucket options (meta.go's buildCounter).
func (p *Plugin) buildBucketing(o bucketTag, recordType string) (*bucketing, error) {
	if o.buckets == 0 {
		if o.tz != nil || o.keep != 0 {
			return nil, fmt.Errorf("%w: the tz: and keep: options need a buckets: option too", ErrInvalidConfig)
		}
		return nil, nil
	}
	if strings.Contains(recordType, "@") {
		return nil, fmt.Errorf("%w: record_type %q of a bucketed counter must not contain '@'", ErrInvalidConfig, recordType)
	}
	if len(recordType)+maxLabelLen > MaxKeyLen {
		return nil, fmt.Errorf("%w: record_type %q of a bucketed counter is longer than %d bytes; set type: in the tag", ErrInvalidConfig, recordType, MaxKeyLen-maxLabelLen)
	}
	b := &bucketing{unit: o.buckets, loc: o.tz, keep: o.keep}
	if b.loc == nil {
		b.loc = p.cfg.Location
	}
	return b, nil
}

// bucketType is the record_type of one bucket of a counter.
func bucketType(recordType, label string) string { return recordType + "@" + label }
