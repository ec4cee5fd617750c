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

// Views of 20 stories over 10 days (Berlin's DST end among them), then the
// page of 20 with a 7-day total and sparkline each: auto-fill, LoadWindows
// and SeriesMany against the tally, in one statement per field.
func TestDashboardWindowsAndSeries(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	clock := newClock(time.Time{})
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		type view struct {
			at time.Time
			s  int
		}
		var views []view
		start := time.Date(2026, 10, 20, 3, 0, 0, 0, time.UTC)
		for at := start; at.Before(start.AddDate(0, 0, 10)); at = at.Add(97 * time.Minute) {
			clock.Set(at)
			s := rand.IntN(len(stories))
			require.NoError(t, slotted.Increment(db, &Story{ID: stories[s].ID}, "views"))
			views = append(views, view{at, s})
		}
		now := time.Date(2026, 10, 27, 10, 0, 0, 0, berlin)
		clock.Set(now)
		day := func(at time.Time) int { return civilDay(now, berlin) - civilDay(at, berlin) } // 0: today
		want := make([][7]int64, len(stories))
		var all [20]int64
		for _, v := range views {
			all[v.s]++
			if d := day(v.at); d >= 0 && d < 7 {
				want[v.s][6-d]++
			}
		}
		check := func(what string, i int, week int64, spark []slotted.Bucket) {
			require.Len(t, spark, 7, what)
			var sum int64
			for d, b := range spark {
				assert.Equal(t, want[i][d], b.Count, "%s: story %d day %d", what, i, d)
				assert.Equal(t, d, 6-day(b.Start), what)
				sum += b.Count
			}
			assert.Equal(t, sum, week, "%s: story %d", what, i)
		}
		rdb, rec := recorded(db)
		var page []Story
		require.NoError(t, rdb.Order("id").Find(&page).Error)
		assert.Equal(t, 3, rec.count("slotted_counters"), "totals, window, series: one statement each for 20 stories")
		for i, s := range page {
			assert.Equal(t, all[i], s.Views, "the counter keeps its all-time total")
			check("auto-fill", i, s.ViewsWeek, s.Spark)
		}
		loaded := make([]*Story, len(stories))
		for i := range stories {
			loaded[i] = &Story{ID: stories[i].ID}
		}
		before := rec.count("slotted_counters")
		require.NoError(t, slotted.LoadWindows(rdb, loaded))
		require.NoError(t, slotted.LoadWindows(rdb, loaded, "Spark"))
		assert.Equal(t, 3, rec.count("slotted_counters")-before)
		many, err := slotted.SeriesMany(rdb, &stories, "views", slotted.LastDays(7))
		require.NoError(t, err)
		assert.Equal(t, 4, rec.count("slotted_counters")-before, "SeriesMany: one statement")
		require.Len(t, many, len(stories))
		for i := range stories {
			check("LoadWindows", i, loaded[i].ViewsWeek, loaded[i].Spark)
			check("SeriesMany", i, loaded[i].ViewsWeek, many[i])
			assert.Zero(t, loaded[i].Views, "LoadWindows leaves the counter alone")
		}
	}, slotted.Config{Now: clock.Now})
}

// Bad extra-field tags are refused as ErrInvalidConfig where the model is used.
func TestDashboardBadTags(t *testing.T) {
	type badWindow struct {
		ID    uint
		Views int64 `gorm:"-" slotted:"views;buckets:day"`
		Week  int64 `gorm:"-" slotted:"views;window:7x"`
	}
	type unbucketed struct {
		ID    uint
		Likes int64 `gorm:"-" slotted:"likes"`
		Week  int64 `gorm:"-" slotted:"likes;window:7d"`
	}
	type notBool struct {
		ID    uint
		Likes int64 `gorm:"-" slotted:"likes"`
		Liked int   `gorm:"-" slotted:"likes;applied"`
	}
	type notBuckets struct {
		ID    uint
		Views int64   `gorm:"-" slotted:"views;buckets:day"`
		Spark []int64 `gorm:"-" slotted:"views;series:7d"`
	}
	type noCounter struct {
		ID    uint
		Likes int64 `gorm:"-" slotted:"likes"`
		Liked bool  `gorm:"-" slotted:"hearts;applied"`
	}
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		for _, m := range []any{&badWindow{ID: 1}, &unbucketed{ID: 1}, &notBool{ID: 1}, &notBuckets{ID: 1}} {
			_, err := slotted.Count(db, m, "likes")
			if err == nil {
				_, err = slotted.Count(db, m, "views")
			}
			assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "%T", m)
		}
		_, err := slotted.Count(db, &noCounter{ID: 1}, "likes")
		assert.ErrorIs(t, err, slotted.ErrUnknownCounter)
	})
}
