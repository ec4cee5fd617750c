package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// A counter field set on a new record seeds its counter, in the Create's transaction.
func TestCreateSeedsCounterFields(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "seeded", Likes: 5, Views: -2}
		require.NoError(t, db.Create(&post).Error)
		likes, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 5, likes)
		views, err := slotted.Count(db, &post, "views")
		require.NoError(t, err)
		assert.EqualValues(t, -2, views)
		assert.EqualValues(t, 5, post.Likes, "the field already says what the counter holds")

		rdb, rec := recorded(db)
		posts := []Post{{Title: "a", Likes: 1}, {Title: "b"}, {Title: "c", Likes: 3, Stars: 2}}
		require.NoError(t, rdb.CreateInBatches(&posts, 2).Error)
		assert.Equal(t, 3, rec.count("slotted_counters"), "one upsert per non-zero counter: %q", rec.statements())
		var got []Post
		require.NoError(t, db.Order("id").Find(&got, []uint{posts[0].ID, posts[1].ID, posts[2].ID}).Error)
		assert.Equal(t, []int64{1, 0, 3}, []int64{got[0].Likes, got[1].Likes, got[2].Likes})
		assert.EqualValues(t, 2, got[2].Stars)

		// Rolled back with the record.
		err = db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&Post{ID: 500, Likes: 9}).Error)
			return gorm.ErrInvalidData
		})
		require.ErrorIs(t, err, gorm.ErrInvalidData)
		likes, err = slotted.Count(db, &Post{ID: 500}, "likes")
		require.NoError(t, err)
		assert.Zero(t, likes)

		// An upsert of a record whose key is set may update an existing row: its fields are left alone.
		require.NoError(t, db.Save(&Post{ID: post.ID, Title: "saved", Likes: 100}).Error)
		require.NoError(t, db.Save(&Post{ID: 600, Title: "saved new", Likes: 100}).Error)
		for _, id := range []uint{post.ID, 600} {
			likes, err = slotted.Count(db, &Post{ID: id}, "likes")
			require.NoError(t, err)
			assert.NotEqualValues(t, 100, likes, "post %d", id)
		}
	})
}
