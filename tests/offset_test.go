package tests

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestPagingReplacesCallersOffset: db's Order, Limit and Offset are replaced
// by the listing's (docs/listings.md). gorm's Limit clause keeps an earlier
// offset whenever the new one is 0, which is every cursor page, so a caller's
// db.Offset(2) used to drop records from every page after the first.
func TestPagingReplacesCallersOffset(t *testing.T) {
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	clk := newClock(now)
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migrateListed(t, db)
		recs := make([]Listed, 30)
		require.NoError(t, db.Create(&recs).Error)
		rng := rand.New(rand.NewPCG(5, 9))
		likes, views := map[uint]int64{}, map[uint]int64{}
		var ids []uint
		for i := range recs {
			ids = append(ids, recs[i].ID)
			d := rng.Int64N(9)
			require.NoError(t, slotted.Add(db, &recs[i], "likes", d))
			likes[recs[i].ID] += d
			clk.Set(now.Add(-time.Duration(rng.IntN(48)) * time.Hour))
			d = rng.Int64N(9)
			require.NoError(t, slotted.Add(db, &recs[i], "views", d))
			views[recs[i].ID] += d
		}
		clk.Set(now)
		_, err := slotted.RollUpAll(db, &Listed{})
		require.NoError(t, err)
		get := func(m map[uint]int64) func(uint) int64 { return func(id uint) int64 { return m[id] } }
		want := order(ids, get(likes), false)
		skewed := db.Offset(2).Limit(3).Order("id")

		for _, read := range []slotted.Read{slotted.ReadExact, slotted.ReadFast} {
			for _, offsets := range []bool{false, true} {
				got, totals := pageAll(t, skewed, "likes", slotted.ListOptions{Read: read}, offsets)
				require.Equal(t, want, got, "List read=%v offsets=%v", read, offsets)
				for i, id := range got {
					require.Equal(t, likes[id], totals[i])
				}
			}
		}

		// Trending: every record once, in the order the unskewed db gives.
		walk := func(db *gorm.DB) []uint {
			opts := slotted.TrendOptions{Buckets: 3, HalfLife: 1, Limit: 4, At: now}
			var got []uint
			for pages := 0; ; pages++ {
				require.Less(t, pages, 20)
				page, err := slotted.Trending(db, &Listed{}, "views", opts)
				require.NoError(t, err)
				got = append(got, ids0(page.Items)...)
				if page.Next == "" {
					return got
				}
				opts.After = page.Next
			}
		}
		plain := walk(db)
		require.ElementsMatch(t, ids, plain)
		require.Equal(t, plain, walk(skewed), "Trending")

		// Top and TopBetween: the first n, whatever db's Offset and Limit.
		top, err := slotted.Top(skewed, &Listed{}, "likes", 10)
		require.NoError(t, err)
		require.Equal(t, want[:10], ids0(top), "Top")
		top, err = slotted.Top(skewed, &Listed{}, "shares", 10) // no cache column: the exact path
		require.NoError(t, err)
		require.Len(t, top, 10, "Top without a cache column")
		wantViews := order(ids, get(views), false)
		top, err = slotted.TopBetween(skewed, &Listed{}, "views", 10, now.AddDate(0, 0, -3), now.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, wantViews[:10], ids0(top), "TopBetween")
		require.True(t, slices.IsSortedFunc(ids0(top), func(a, b uint) int { return int(views[b] - views[a]) }))
		for _, r := range top {
			require.Equal(t, views[r.ID], r.Views, "TopBetween fills the window's total")
		}
	}, slotted.Config{Now: clk.Now})
}
