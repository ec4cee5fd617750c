package tests

import (
	"testing"

	"github.com/slotted-go/slotted"
	"github.com/slotted-go/slotted/diagnose"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// TestMarkersInvisibleToReaders: with outcome markers on (the default on the
// servers), the marker rows the writes leave are neither listed nor changed by
// the calls that scan the counter table across records: diagnose's hottest
// counters (where a marker's sequence number would top the totals), CompactAll,
// Sweep and Top. Their counts and the markers' rows stay as they were.
func TestMarkersInvisibleToReaders(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := []Post{{Title: "m1"}, {Title: "m2"}, {Title: "gone"}}
		require.NoError(t, db.Create(&posts).Error)
		for i := range posts {
			for range 5 * (i + 1) {
				require.NoError(t, slotted.Increment(db, &posts[i], "likes"))
			}
		}
		markers := func() map[string]int64 {
			var rows []slotted.SlottedCounter
			require.NoError(t, slotted.Table(db).Where("record_type = ?", slotted.MarkerType).Find(&rows).Error)
			out := map[string]int64{}
			for _, r := range rows {
				out[string(r.RecordID)] += r.Count
				assert.Zero(t, r.Slot, "a marker is one row, slot 0")
			}
			return out
		}
		before := markers()
		if markerRows(db) == 0 {
			require.Empty(t, before, "no markers on SQLite")
		} else {
			require.NotEmpty(t, before, "the writes left their markers")
		}

		r, err := diagnose.Run(db, diagnose.Options{Top: 1000})
		require.NoError(t, err)
		require.NotEmpty(t, r.LargestTotals)
		for _, c := range append(r.MostRows, r.LargestTotals...) {
			assert.NotEqual(t, slotted.MarkerType, c.Type, "diagnose listed a marker: %+v", c)
		}

		_, err = slotted.CompactAll(db)
		require.NoError(t, err)
		require.NoError(t, db.Exec("DELETE FROM posts WHERE id = ?", posts[2].ID).Error) // raw: its counters become orphans
		_, err = slotted.Sweep(db, &Post{})
		require.NoError(t, err)
		assert.Equal(t, before, markers(), "markers untouched by CompactAll and Sweep")

		top, err := slotted.Top(db, &Post{}, "likes", 10)
		require.NoError(t, err)
		require.Len(t, top, 2)
		assert.EqualValues(t, 10, top[0].Likes)
		assert.EqualValues(t, 5, top[1].Likes)
		n, err := slotted.Count(db, &posts[2], "likes")
		require.NoError(t, err)
		assert.Zero(t, n, "the orphan's counters swept")
	})
}
