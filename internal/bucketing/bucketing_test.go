package bucketing

import (
	"errors"
	"testing"
	"time"

	"github.com/slotted-go/slotted/internal/errs"
)

// The bucket arithmetic, every 29 minutes of a year in zones with daylight
// saving time (both hemispheres), half- and quarter-hour offsets, and a zone
// whose clocks skipped midnight.
func TestBucketsTileTime(t *testing.T) {
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata", "Asia/Kathmandu", "America/Sao_Paulo", "Australia/Lord_Howe"}
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []Unit{Hourly, Daily, Weekly, Monthly} {
			b := &Scheme{Unit: u, Loc: loc}
			from := time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)
			to := time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)
			prev := b.Of(from)
			for at := from; at.Before(to); at = at.Add(29 * time.Minute) {
				cur := b.Of(at)
				if at.Before(cur.Start) || !at.Before(cur.End) {
					t.Fatalf("%s %s: %s is outside its bucket %s [%s, %s)", zone, u, at, cur.Label, cur.Start, cur.End)
				}
				if again := b.Of(cur.Start); again != cur {
					t.Fatalf("%s %s: the bucket of %s's start is %s", zone, u, cur.Label, again.Label)
				}
				if last := b.Of(cur.End.Add(-time.Nanosecond)); last.Label != cur.Label {
					t.Fatalf("%s %s: the last instant of %s is in %s", zone, u, cur.Label, last.Label)
				}
				if cur.Label != prev.Label {
					if !b.Valid(cur.Label) {
						t.Fatalf("%s %s: label %q is not valid", zone, u, cur.Label)
					}
					if cur.Start != prev.End || cur.Label <= prev.Label {
						t.Fatalf("%s %s: %s [%s, %s) follows %s [%s, %s)", zone, u, cur.Label, cur.Start, cur.End, prev.Label, prev.Start, prev.End)
					}
					prev = cur
				}
			}
		}
	}
}

func TestBucketDaylightSavingDays(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	day := &Scheme{Unit: Daily, Loc: ny}
	hour := &Scheme{Unit: Hourly, Loc: ny}
	for _, c := range []struct {
		date  time.Time
		hours int
	}{{time.Date(2026, 3, 8, 12, 0, 0, 0, ny), 23}, {time.Date(2026, 11, 1, 12, 0, 0, 0, ny), 25}, {time.Date(2026, 11, 2, 12, 0, 0, 0, ny), 24}} {
		b := day.Of(c.date)
		if got := b.End.Sub(b.Start); got != time.Duration(c.hours)*time.Hour {
			t.Errorf("%s lasts %v, want %dh", b.Label, got, c.hours)
		}
		hours, err := hour.Between(b.Start, b.End)
		if err != nil || len(hours) != c.hours {
			t.Errorf("%s has %d hour buckets (%v), want %d", b.Label, len(hours), err, c.hours)
		}
	}
	// 01:30 EDT and 01:30 EST: the same clock time, two buckets.
	first := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)
	second := first.Add(time.Hour)
	if first.In(ny).Format("15:04") != second.In(ny).Format("15:04") {
		t.Fatal("test dates do not repeat a local time")
	}
	a, b := hour.Of(first), hour.Of(second)
	if a.Label != "2026-11-01T05" || b.Label != "2026-11-01T06" {
		t.Errorf("repeated hour labelled %q and %q", a.Label, b.Label)
	}
	// Kolkata is UTC+5:30: its hours start at :30 UTC.
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	if got := (&Scheme{Unit: Hourly, Loc: kolkata}).Of(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)).Label; got != "2026-11-23T08:30" {
		t.Errorf("Kolkata hour labelled %q", got)
	}
	// Sao Paulo skipped midnight on 2018-11-04: the day began at 01:00.
	sp, _ := time.LoadLocation("America/Sao_Paulo")
	d := (&Scheme{Unit: Daily, Loc: sp}).Of(time.Date(2018, 11, 4, 12, 0, 0, 0, sp))
	if d.Start.In(sp).Format("2006-01-02 15:04") != "2018-11-04 01:00" || d.End.Sub(d.Start) != 23*time.Hour {
		t.Errorf("Sao Paulo 2018-11-04: [%s, %s)", d.Start.In(sp), d.End.In(sp))
	}
}

func TestBucketWindows(t *testing.T) {
	b := &Scheme{Unit: Daily, Loc: time.UTC}
	day := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		from, to time.Time
		want     []string
	}{
		{day, day.AddDate(0, 0, 1), []string{"2026-11-23"}},
		{day, day, nil},
		{day.Add(time.Hour), day.Add(2 * time.Hour), []string{"2026-11-23"}},
		{day.Add(-time.Nanosecond), day.Add(time.Nanosecond), []string{"2026-11-22", "2026-11-23"}},
		{day.AddDate(0, 0, -6), day.AddDate(0, 0, 1), []string{"2026-11-17", "2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23"}},
	} {
		got, err := b.Between(c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, g := range got {
			labels = append(labels, g.Label)
		}
		if len(labels) != len(c.want) || (len(labels) > 0 && labels[0] != c.want[0] || len(labels) > 0 && labels[len(labels)-1] != c.want[len(c.want)-1]) {
			t.Errorf("[%s, %s): %v, want %v", c.from, c.to, labels, c.want)
		}
	}
	if _, err := b.Between(day, day.Add(-time.Second)); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("reversed window: %v", err)
	}
	if _, err := b.Between(day, day.AddDate(30, 0, 0)); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("30 years of days: %v", err)
	}
	if got := b.Back(b.Of(day), 3).Label; got != "2026-11-20" {
		t.Errorf("3 days back: %s", got)
	}
	for _, bad := range []string{"2026-11-32", "2026-11-3", "2026-11-23T01", "x", ""} {
		if b.Valid(bad) {
			t.Errorf("%q is valid", bad)
		}
	}
}

func TestWeekLabels(t *testing.T) {
	for _, c := range []struct {
		label string
		ok    bool
	}{{"2026-W01", true}, {"2026-W53", true}, {"2027-W53", false}, {"2026-W00", false}, {"2026-W1", false}, {"2026-11", false}} {
		if got := validWeek(c.label); got != c.ok {
			t.Errorf("validWeek(%q) = %v", c.label, got)
		}
	}
	// 2026-W01 begins on Monday 2025-12-29.
	if w := WeekOf(time.Date(2025, 12, 29, 0, 0, 0, 0, time.UTC), time.UTC); w.Label != "2026-W01" {
		t.Errorf("2025-12-29 is in %s", w.Label)
	}
}
