package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// The newer calls composed with the older features (DryRun, TablePrefix,
// dbresolver routing, bucketed counters, bad input).

// TestDryRunNewCallsReportNothingDone is TestDryRunReportsNothingDone for the
// once-table lookups, windows, dashboards, listings and MustExist: each
// returns ErrDryRun instead of an empty answer that looks real (no likes, no
// records, a missing record).
func TestDryRunNewCallsReportNothingDone(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		migrateListed(t, db)
		s := Story{ID: stories[0].ID}
		_, err := slotted.AddOnce(db, &s, "likes", 1, "user:dry")
		require.NoError(t, err)
		require.NoError(t, slotted.Add(db, &s, "views", 2))
		listed := Listed{Grp: 1}
		require.NoError(t, db.Create(&listed).Error)
		require.NoError(t, slotted.Add(db, &listed, "views", 3))
		before := counterRows(t, db)

		dry := db.Session(&gorm.Session{DryRun: true})
		liked, err := slotted.Applied(dry, &s, "likes", "user:dry")
		assert.ErrorIs(t, err, slotted.ErrDryRun, "Applied")
		assert.False(t, liked)
		many, err := slotted.AppliedMany(dry, &[]Story{s}, "likes", "user:dry")
		assert.ErrorIs(t, err, slotted.ErrDryRun, "AppliedMany")
		assert.Nil(t, many)
		ss := []Story{{ID: s.ID}}
		assert.ErrorIs(t, slotted.LoadApplied(dry, &ss, "user:dry"), slotted.ErrDryRun, "LoadApplied")
		assert.False(t, ss[0].Liked)
		keys, err := slotted.OnceKeys(dry, &s, "likes", "", 10)
		assert.ErrorIs(t, err, slotted.ErrDryRun, "OnceKeys")
		assert.Nil(t, keys)
		n, err := slotted.CountIn(dry, &s, "views", slotted.LastDays(7))
		assert.ErrorIs(t, err, slotted.ErrDryRun, "CountIn")
		assert.Zero(t, n)
		series, err := slotted.SeriesIn(dry, &s, "views", slotted.LastDays(7))
		assert.ErrorIs(t, err, slotted.ErrDryRun, "SeriesIn")
		assert.Nil(t, series)
		assert.ErrorIs(t, slotted.LoadIn(dry, &ss, slotted.LastDays(7), "views"), slotted.ErrDryRun, "LoadIn")
		sm, err := slotted.SeriesMany(dry, &ss, "views", slotted.LastDays(7))
		assert.ErrorIs(t, err, slotted.ErrDryRun, "SeriesMany")
		assert.Nil(t, sm)
		assert.ErrorIs(t, slotted.LoadWindows(dry, &ss), slotted.ErrDryRun, "LoadWindows")
		assert.Zero(t, ss[0].ViewsWeek)
		for _, read := range []slotted.Read{slotted.ReadExact, slotted.ReadFast} {
			page, err := slotted.List(dry, &Listed{}, "likes", slotted.ListOptions{Limit: 5, Read: read})
			assert.ErrorIs(t, err, slotted.ErrDryRun, "List %s", read)
			assert.Nil(t, page)
		}
		page, err := slotted.Trending(dry, &Listed{}, "views", slotted.TrendOptions{Limit: 5, Buckets: 3, HalfLife: 1})
		assert.ErrorIs(t, err, slotted.ErrDryRun, "Trending")
		assert.Nil(t, page)
		p := Story{ID: s.ID, Likes: 4}
		assert.ErrorIs(t, slotted.Increment(slotted.MustExist(dry), &p, "likes"), slotted.ErrDryRun, "MustExist Increment")
		_, err = slotted.AddOnce(slotted.MustExist(dry), &p, "likes", 1, "user:dry2")
		assert.ErrorIs(t, err, slotted.ErrDryRun, "MustExist AddOnce")
		assert.EqualValues(t, 4, p.Likes)

		assert.Equal(t, before, counterRows(t, db), "nothing was written")
		liked, err = slotted.Applied(db, &s, "likes", "user:dry2")
		require.NoError(t, err)
		assert.False(t, liked, "the dry AddOnce stored no key")
	})
}
