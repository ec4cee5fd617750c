package slotted

import (
	"errors"
	"testing"
	"time"
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
		for _, u := range []unit{hourly, daily, weekly, monthly} {
			b := &bucketing{unit: u, loc: loc}
			from := time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)
			to := time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)
			prev := b.of(from)
			for at := from; at.Before(to); at = at.Add(29 * time.Minute) {
				cur := b.of(at)
				if at.Before(cur.start) || !at.Before(cur.end) {
					t.Fatalf("%s %s: %s is outside its bucket %s [%s, %s)", zone, u, at, cur.label, cur.start, cur.end)
				}
				if again := b.of(cur.start); again != cur {
					t.Fatalf("%s %s: the bucket of %s's start is %s", zone, u, cur.label, again.label)
				}
				if last := b.of(cur.end.Add(-time.Nanosecond)); last.label != cur.label {
					t.Fatalf("%s %s: the last instant of %s is in %s", zone, u, cur.label, last.label)
				}
				if cur.label != prev.label {
					if !b.valid(cur.label) {
						t.Fatalf("%s %s: label %q is not valid", zone, u, cur.label)
					}
					if cur.start != prev.end || cur.label <= prev.label {
						t.Fatalf("%s %s: %s [%s, %s) follows %s [%s, %s)", zone, u, cur.label, cur.start, cur.end, prev.label, prev.start, prev.end)
					}
					prev = cur
				}
			}
		}
	}
}

func TestBucketDaylightSavingDays(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	day := &bucketing{unit: daily, loc: ny}
	hour := &bucketing{unit: hourly, loc: ny}
	for _, c := range []struct {
		date  time.Time
		hours int
	}{{time.Date(2026, 3, 8, 12, 0, 0, 0, ny), 23}, {time.Date(2026, 11, 1, 12, 0, 0, 0, ny), 25}, {time.Date(2026, 11, 2, 12, 0, 0, 0, ny), 24}} {
		b := day.of(c.date)
		if got := b.end.Sub(b.start); got != time.Duration(c.hours)*time.Hour {
			t.Errorf("%s lasts %v, want %dh", b.label, got, c.hours)
		}
		hours, err := hour.between(b.start, b.end)
		if err != nil || len(hours) != c.hours {
			t.Errorf("%s has %d hour buckets (%v), want %d", b.label, len(hours), err, c.hours)
		}
	}
	// 01:30 EDT and 01:30 EST: the same clock time, two buckets.
	first := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)
	second := first.Add(time.Hour)
	if first.In(ny).Format("15:04") != second.In(ny).Format("15:04") {
		t.Fatal("test dates do not repeat a local time")
	}
	a, b := hour.of(first), hour.of(second)
	if a.label != "2026-11-01T05" || b.label != "2026-11-01T06" {
		t.Errorf("repeated hour labelled %q and %q", a.label, b.label)
	}
	// Kolkata is UTC+5:30: its hours start at :30 UTC.
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	if got := (&bucketing{unit: hourly, loc: kolkata}).of(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)).label; got != "2026-11-23T08:30" {
		t.Errorf("Kolkata hour labelled %q", got)
	}
	// Sao Paulo skipped midnight on 2018-11-04: the day began at 01:00.
	sp, _ := time.LoadLocation("America/Sao_Paulo")
	d := (&bucketing{unit: daily, loc: sp}).of(time.Date(2018, 11, 4, 12, 0, 0, 0, sp))
	if d.start.In(sp).Format("2006-01-02 15:04") != "2018-11-04 01:00" || d.end.Sub(d.start) != 23*time.Hour {
		t.Errorf("Sao Paulo 2018-11-04: [%s, %s)", d.start.In(sp), d.end.In(sp))
	}
}

func TestBucketWindows(t *testing.T) {
	b := &bucketing{unit: daily, loc: time.UTC}
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
		got, err := b.between(c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, g := range got {
			labels = append(labels, g.label)
		}
		if len(labels) != len(c.want) || (len(labels) > 0 && labels[0] != c.want[0] || len(labels) > 0 && labels[len(labels)-1] != c.want[len(c.want)-1]) {
			t.Errorf("[%s, %s): %v, want %v", c.from, c.to, labels, c.want)
		}
	}
	if _, err := b.between(day, day.Add(-time.Second)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("reversed window: %v", err)
	}
	if _, err := b.between(day, day.AddDate(30, 0, 0)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("30 years of days: %v", err)
	}
	if got := b.back(b.of(day), 3).label; got != "2026-11-20" {
		t.Errorf("3 days back: %s", got)
	}
	for _, bad := range []string{"2026-11-32", "2026-11-3", "2026-11-23T01", "x", ""} {
		if b.valid(bad) {
			t.Errorf("%q is valid", bad)
		}
	}
}
