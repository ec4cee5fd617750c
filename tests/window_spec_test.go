package tests

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Dash has bucketed counters in zones with daylight saving time, a week
// counter, one with retention, and fields holding windows of views.
type Dash struct {
	ID    uint
	Title string
	Views int64 `gorm:"-" slotted:"views;buckets:day;tz:Europe/Berlin;slots:4"`
	Hours int64 `gorm:"-" slotted:"hours;buckets:hour;tz:America/New_York;slots:4"`
	Weeks int64 `gorm:"-" slotted:"weeks;buckets:week;tz:Europe/Berlin;slots:4"`
	Kept  int64 `gorm:"-" slotted:"kept;buckets:day;keep:3;slots:2"`
}

func migrateDashes(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(&Dash{}))
	require.NoError(t, db.AutoMigrate(&Dash{}))
}

// civilDay is a local date as a day number.
func civilDay(t time.Time, loc *time.Location) int {
	y, m, d := t.In(loc).Date()
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func isoMonday(t time.Time, loc *time.Location) int {
	return civilDay(t, loc) - (int(t.In(loc).Weekday())+6)%7
}

type write struct {
	at    time.Time
	id    uint
	delta int64
}

// Writes every 73 minutes over the weeks around the end of daylight saving
// time in Berlin (2026-10-25) and New York (2026-11-01), then CountIn,
// SeriesIn and LoadIn at several instants, each against the sum of the writes
// a brute-force test puts in the window.
func TestWindowCountsAgainstBruteForce(t *testing.T) {
	berlin, ny := mustLoad(t, "Europe/Berlin"), mustLoad(t, "America/New_York")
	clock := newClock(time.Time{})
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateDashes(t, db)
		dashes := []Dash{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&dashes).Error)
		var writes []write
		start := time.Date(2026, 10, 17, 0, 0, 0, 0, time.UTC)
		for at := start; at.Before(start.AddDate(0, 0, 18)); at = at.Add(73 * time.Minute) {
			clock.Set(at)
			d := &dashes[rand.IntN(len(dashes))]
			delta := int64(rand.IntN(5) + 1)
			for _, c := range []string{"views", "hours", "weeks"} {
				require.NoError(t, slotted.Add(db, d, c, delta))
			}
			writes = append(writes, write{at, d.ID, delta})
		}
		sum := func(id uint, in func(time.Time) bool) (n int64) {
			for _, w := range writes {
				if w.id == id && in(w.at) {
					n += w.delta
				}
			}
			return n
		}
		for _, now := range []time.Time{
			time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC), // Berlin's 25-hour day
			time.Date(2026, 10, 26, 0, 10, 0, 0, berlin),   // a Monday just after midnight
			time.Date(2026, 11, 1, 23, 59, 0, 0, berlin),   // a Sunday just before midnight
			time.Date(2026, 11, 1, 1, 30, 0, 0, ny),        // New York's repeated hour
			time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC),
		} {
			clock.Set(now)
			for _, d := range dashes {
				for _, c := range []struct {
					counter string
					w       slotted.Window
					in      func(time.Time) bool
				}{
					{"views", slotted.Today(), func(at time.Time) bool { return civilDay(at, berlin) == civilDay(now, berlin) }},
					{"views", slotted.LastDays(7), func(at time.Time) bool {
						n := civilDay(now, berlin) - civilDay(at, berlin)
						return n >= 0 && n < 7
					}},
					{"views", slotted.ThisWeek(), func(at time.Time) bool { return isoMonday(at, berlin) == isoMonday(now, berlin) }},
					{"weeks", slotted.ThisWeek(), func(at time.Time) bool { return isoMonday(at, berlin) == isoMonday(now, berlin) }},
					{"weeks", slotted.LastBuckets(2), func(at time.Time) bool {
						n := isoMonday(now, berlin) - isoMonday(at, berlin)
						return n >= 0 && n < 14
					}},
					{"hours", slotted.LastHours(6), func(at time.Time) bool {
						return !at.Before(now.Truncate(time.Hour).Add(-5*time.Hour)) && at.Before(now.Truncate(time.Hour).Add(time.Hour))
					}},
					{"hours", slotted.Today(), func(at time.Time) bool { return civilDay(at, ny) == civilDay(now, ny) }},
				} {
					want := sum(d.ID, c.in) // writes dated after now count too: they are in the buckets
					got, err := slotted.CountIn(db, &d, c.counter, c.w)
					require.NoError(t, err)
					assert.Equal(t, want, got, "%s %s of dash %d at %s", c.counter, c.w, d.ID, now)
					series, err := slotted.SeriesIn(db, &d, c.counter, c.w)
					require.NoError(t, err)
					var total int64
					for i, b := range series {
						assert.Equal(t, sum(d.ID, func(at time.Time) bool { return !at.Before(b.Start) && at.Before(b.End) }), b.Count)
						if i > 0 {
							assert.Equal(t, series[i-1].End, b.Start)
						}
						total += b.Count
					}
					assert.Equal(t, want, total, "%s %s series of dash %d at %s", c.counter, c.w, d.ID, now)
				}
			}
			loaded := []Dash{{ID: dashes[0].ID}, {ID: dashes[1].ID}}
			require.NoError(t, slotted.LoadIn(db, &loaded, slotted.LastDays(7), "views"))
			for _, d := range loaded {
				assert.Equal(t, sum(d.ID, func(at time.Time) bool {
					n := civilDay(now, berlin) - civilDay(at, berlin)
					return n >= 0 && n < 7
				}), d.Views)
			}
		}
		// A day counter's Today() on Berlin's 25-hour day is 1 bucket, an hour
		// counter's on New York's is 25.
		clock.Set(time.Date(2026, 11, 1, 12, 0, 0, 0, ny))
		series, err := slotted.SeriesIn(db, &dashes[0], "hours", slotted.Today())
		require.NoError(t, err)
		assert.Len(t, series, 25)
	}, slotted.Config{Now: clock.Now})
}

func TestWindowRefused(t *testing.T) {
	clock := newClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateDashes(t, db)
		d := Dash{Title: "a"}
		require.NoError(t, db.Create(&d).Error)
		require.NoError(t, slotted.Increment(db, &d, "kept"))
		require.NoError(t, slotted.Increment(db, &d, "views"))
		n, err := slotted.CountIn(db, &d, "kept", slotted.LastDays(3))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		_, err = slotted.CountIn(db, &d, "kept", slotted.LastDays(4))
		assert.ErrorIs(t, err, slotted.ErrPastRetention)
		_, err = slotted.SeriesIn(db, &d, "kept", slotted.ThisMonth())
		assert.ErrorIs(t, err, slotted.ErrPastRetention)
		assert.ErrorIs(t, slotted.LoadIn(db, &[]Dash{d}, slotted.LastDays(4), "kept"), slotted.ErrPastRetention)
		_, err = slotted.CountIn(db, &d, "views", slotted.LastHours(2))
		assert.ErrorIs(t, err, slotted.ErrInvalidArgument, "hours of a day counter")
		_, err = slotted.CountIn(db, &d, "weeks", slotted.Today())
		assert.ErrorIs(t, err, slotted.ErrInvalidArgument, "a day of a week counter")
		// from == to is an empty window: no bucket, 0, no statement.
		s, err := slotted.Series(db, &d, "views", clock.Now(), clock.Now())
		require.NoError(t, err)
		assert.Empty(t, s)
		n, err = slotted.CountBetween(db, &d, "views", clock.Now(), clock.Now())
		require.NoError(t, err)
		assert.Zero(t, n)
		top, err := slotted.TopBetween(db, &Dash{}, "views", 5, clock.Now(), clock.Now())
		require.NoError(t, err)
		require.Len(t, top, 1)
		assert.Zero(t, top[0].Views, "the empty window's total")
		var ordered []Dash
		require.NoError(t, db.Scopes(slotted.OrderByBetween(&Dash{}, "views", "DESC", clock.Now(), clock.Now())).Find(&ordered).Error)
		assert.Len(t, ordered, 1)
	}, slotted.Config{Now: clock.Now})
}
