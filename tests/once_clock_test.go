package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestOnceExpiryFollowsConfigNow: ExpireAfter counts from Config.Now, and
// every check of it (AddOnce applying an expired key again, RemoveOnce,
// Applied, OnceKeys, WhereApplied, auto-fill) and the Runner's PruneKeys read
// that clock too, in and out of a transaction. The clock here is years
// behind the wall clock: a check on the wall clock sees keys live that the
// injected clock says expired, and prunes keys it says are live.
func TestOnceExpiryFollowsConfigNow(t *testing.T) {
	t0 := time.Date(2020, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := newClock(t0)
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		stories := migrateStories(t, db)
		clk.Set(t0)
		hour := slotted.OnceOptions{ExpireAfter: time.Hour}
		day := slotted.OnceOptions{ExpireAfter: 24 * time.Hour}
		for _, s := range []int{0, 1} {
			ok, err := slotted.AddOnce(db, &stories[s], "likes", 1, "short", hour)
			require.NoError(t, err)
			require.True(t, ok)
		}
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error { // not coalesced: the same clock
			ok, err := slotted.AddOnce(tx, &stories[2], "likes", 1, "short", hour)
			require.True(t, ok)
			return err
		}))
		ok, err := slotted.AddOnce(db, &stories[0], "likes", 1, "long", day)
		require.NoError(t, err)
		require.True(t, ok)

		applied := func(s int, key string) bool {
			t.Helper()
			ok, err := slotted.Applied(db, &stories[s], "likes", key)
			require.NoError(t, err)
			return ok
		}
		require.True(t, applied(0, "short"))
		require.True(t, applied(2, "short"))

		clk.Set(t0.Add(2 * time.Hour)) // "short" has expired, "long" has not
		require.False(t, applied(0, "short"), "Applied: expired by Config.Now")
		require.False(t, applied(2, "short"), "Applied: the transaction's key too")
		require.True(t, applied(0, "long"))
		keys, err := slotted.OnceKeys(db, &stories[0], "likes", "", 10)
		require.NoError(t, err)
		require.Equal(t, []string{"long"}, keys, "OnceKeys")
		var liked []Story
		require.NoError(t, db.Scopes(slotted.WhereApplied(&Story{}, "likes", "short")).Find(&liked).Error)
		require.Empty(t, liked, "WhereApplied")
		var found []Story
		require.NoError(t, slotted.WithOnceKey(db, "short").Order("id").Limit(3).Find(&found).Error)
		require.False(t, found[0].Liked || found[1].Liked || found[2].Liked, "auto-fill")

		removed, err := slotted.RemoveOnce(db, &stories[1], "likes", "short")
		require.NoError(t, err)
		require.False(t, removed, "RemoveOnce: an expired key has nothing to undo")
		ok, err = slotted.AddOnce(db, &stories[0], "likes", 1, "short", hour)
		require.NoError(t, err)
		require.True(t, ok, "AddOnce applies an expired key again")
		require.True(t, applied(0, "short"))
		n, err := slotted.Count(db, &stories[0], "likes")
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		n, err = slotted.Count(db, &stories[1], "likes")
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the expired key's like stays counted")

		// The Runner prunes what Config.Now says expired: stories 1 and 2's "short", not "long"
		// nor story 0's new "short".
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		passes := make(chan slotted.Pass, 1)
		done := make(chan error, 1)
		go func() {
			done <- slotted.Runner{Interval: time.Hour, PruneKeys: true, OnPass: func(p slotted.Pass) {
				select {
				case passes <- p:
				default:
				}
			}}.Run(ctx, db)
		}()
		pass := <-passes
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, pass.Err)
		require.EqualValues(t, 2, pass.Pruned)
		var left []string
		for _, k := range onceKeys(t, db) {
			left = append(left, k.OpKey)
		}
		require.ElementsMatch(t, []string{"long", "short"}, left)
	}, slotted.Config{Now: clk.Now})
}
