package bucketing

import (
	"errors"
	"testing"
	"time"

	"github.com/slotted-go/slotted/internal/errs"
)

// civil is a local date as a day number, for brute-force date arithmetic.
func civil(t time.Time, loc *time.Location) int {
	y, m, d := t.In(loc).Date()
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Every Window, at instants around the days daylight saving time begins and
// ends and around week and month boundaries, against a brute-force membership
// test of instants 5 minutes apart: an instant is in the window's buckets
// exactly when its local date (or hour, ISO week, month) says it should be.
func TestWindowsAgainstBruteForce(t *testing.T) {
	type spec struct {
		w    Window
		unit Unit
		in   func(at, now time.Time, loc *time.Location) bool
	}
	specs := []spec{
		{Today(), Daily, func(at, now time.Time, loc *time.Location) bool { return civil(at, loc) == civil(now, loc) }},
		{Today(), Hourly, func(at, now time.Time, loc *time.Location) bool { return civil(at, loc) == civil(now, loc) }},
		{LastDays(7), Daily, func(at, now time.Time, loc *time.Location) bool {
			d := civil(now, loc) - civil(at, loc)
			return d >= 0 && d < 7
		}},
		{LastDays(2), Hourly, func(at, now time.Time, loc *time.Location) bool {
			d := civil(now, loc) - civil(at, loc)
			return d >= 0 && d < 2
		}},
		{ThisWeek(), Daily, func(at, now time.Time, loc *time.Location) bool {
			ay, aw := at.In(loc).ISOWeek()
			ny, nw := now.In(loc).ISOWeek()
			return ay == ny && aw == nw
		}},
		{ThisWeek(), Weekly, func(at, now time.Time, loc *time.Location) bool {
			ay, aw := at.In(loc).ISOWeek()
			ny, nw := now.In(loc).ISOWeek()
			return ay == ny && aw == nw
		}},
		{ThisMonth(), Daily, func(at, now time.Time, loc *time.Location) bool {
			return at.In(loc).Month() == now.In(loc).Month() && at.In(loc).Year() == now.In(loc).Year()
		}},
		{LastHours(5), Hourly, func(at, now time.Time, _ *time.Location) bool {
			cur := now.Truncate(time.Hour) // whole-hour offsets only (the zones below)
			return !at.Before(cur.Add(-4*time.Hour)) && at.Before(cur.Add(time.Hour))
		}},
		{LastBuckets(3), Weekly, func(at, now time.Time, loc *time.Location) bool {
			mon := func(t time.Time) int { return civil(t, loc) - (int(t.In(loc).Weekday())+6)%7 }
			d := mon(now) - mon(at)
			return d >= 0 && d < 21
		}},
	}
	var nows []time.Time
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "UTC"} {
		loc, _ := time.LoadLocation(zone)
		for _, day := range []time.Time{
			time.Date(2026, 3, 29, 0, 0, 0, 0, loc), time.Date(2026, 10, 25, 0, 0, 0, 0, loc), // Berlin's DST days
			time.Date(2026, 3, 8, 0, 0, 0, 0, loc), time.Date(2026, 11, 1, 0, 0, 0, 0, loc), // New York's
			time.Date(2026, 11, 23, 0, 0, 0, 0, loc), time.Date(2026, 11, 29, 0, 0, 0, 0, loc), // a Monday, a Sunday
			time.Date(2026, 12, 31, 0, 0, 0, 0, loc), time.Date(2027, 1, 1, 0, 0, 0, 0, loc), // ISO week 53 of 2026
		} {
			for _, off := range []time.Duration{0, time.Hour + 30*time.Minute, 2*time.Hour + 30*time.Minute, 12 * time.Hour, 23*time.Hour + 59*time.Minute} {
				nows = append(nows, day.Add(off))
			}
		}
		for _, s := range specs {
			b := &Scheme{Unit: s.unit, Loc: loc}
			for _, now := range nows {
				got, err := s.w.Buckets(b, now)
				if err != nil {
					t.Fatalf("%s %s of %s at %s: %v", zone, s.w, s.unit, now, err)
				}
				for i := 1; i < len(got); i++ {
					if !got[i].Start.Equal(got[i-1].End) {
						t.Fatalf("%s %s at %s: bucket %d starts at %s, the previous ends at %s", zone, s.w, now, i, got[i].Start, got[i-1].End)
					}
				}
				from, to := got[0].Start, got[len(got)-1].End
				for at := from.Add(-50 * time.Hour); at.Before(to.Add(50 * time.Hour)); at = at.Add(5 * time.Minute) {
					if want, have := s.in(at, now, loc), !at.Before(from) && at.Before(to); want != have {
						t.Fatalf("%s %s of %s at %s: %s in the window: %v, want %v (window %s..%s)", zone, s.w, s.unit, now, at, have, want, from, to)
					}
				}
			}
		}
		nows = nows[:0]
	}
}

func TestWindowRefusals(t *testing.T) {
	now := time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC)
	day := &Scheme{Unit: Daily, Loc: time.UTC}
	month := &Scheme{Unit: Monthly, Loc: time.UTC}
	for _, c := range []struct {
		w Window
		b *Scheme
	}{{LastHours(3), day}, {ThisWeek(), month}, {Today(), month}, {Window{}, day}, {LastDays(0), day}, {LastDays(MaxWindowBuckets + 1), day}} {
		if _, err := c.w.Buckets(c.b, now); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("%s on %s buckets: %v, want errs.ErrInvalidArgument", c.w, c.b.Unit, err)
		}
	}
	kept := &Scheme{Unit: Daily, Loc: time.UTC, Keep: 3}
	if _, err := LastDays(3).Buckets(kept, now); err != nil {
		t.Errorf("LastDays(3) with keep:3: %v", err)
	}
	if _, err := LastDays(4).Buckets(kept, now); !errors.Is(err, errs.ErrPastRetention) || !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("LastDays(4) with keep:3: %v, want errs.ErrPastRetention", err)
	}
	for _, s := range []string{"today", "7d", "24h", "week", "month", "30b"} {
		w, err := ParseWindow(s)
		if err != nil || w.String() != s {
			t.Errorf("ParseWindow(%q) = %s, %v", s, w, err)
		}
	}
	for _, s := range []string{"", "d", "0d", "-1d", "7x", "yesterday", "10001d"} {
		if _, err := ParseWindow(s); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("ParseWindow(%q): %v", s, err)
		}
	}
}
