package tests

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// A hard delete and the removal of its counters commit or roll back together:
// outside a transaction of the caller's, both run in gorm's default
// transaction, so a counter delete that fails takes the record's delete back.
// The counter table is renamed away to make that DELETE fail for real.
func TestFailedCounterDeleteRollsBackRecordDelete(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := []Post{{Title: "by value"}, {Title: "by condition"}}
		require.NoError(t, db.Create(&posts).Error)
		for i := range posts {
			require.NoError(t, slotted.Add(db, &posts[i], "likes", 3))
		}
		const away = "slotted_counters_away"
		require.NoError(t, db.Migrator().DropTable(away))
		require.NoError(t, db.Migrator().RenameTable(slotted.DefaultTable, away))

		require.Error(t, db.Delete(&posts[0]).Error)
		require.Error(t, db.Where("title = ?", posts[1].Title).Delete(&Post{}).Error)

		require.NoError(t, db.Migrator().RenameTable(away, slotted.DefaultTable))
		for _, p := range posts {
			var n int64
			require.NoError(t, db.Model(&Post{}).Where("id = ?", p.ID).Count(&n).Error)
			require.EqualValues(t, 1, n, "post %q deleted although its counters were not", p.Title)
			likes, err := slotted.Count(db, &p, "likes")
			require.NoError(t, err)
			require.EqualValues(t, 3, likes)
		}

		// With the table back, the same deletes remove both.
		require.NoError(t, db.Delete(&posts[0]).Error)
		require.NoError(t, db.Where("title = ?", posts[1].Title).Delete(&Post{}).Error)
		require.Zero(t, counterRows(t, db))
	})
}
