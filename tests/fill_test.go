package tests

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// seedPosts creates n posts and gives post i (1-based) i likes and 2*i views.
func seedPosts(t *testing.T, db *gorm.DB, n int) []Post {
	t.Helper()
	posts := make([]Post, n)
	for i := range posts {
		posts[i].Title = fmt.Sprintf("post %d", i+1)
	}
	require.NoError(t, db.CreateInBatches(&posts, 500).Error)
	for i := range posts {
		require.NoError(t, slotted.Add(db, &posts[i], "likes", int64(i+1)))
		require.NoError(t, slotted.Add(db, &posts[i], "views", int64(2*(i+1))))
	}
	return posts
}

func TestAutoFillWithoutNPlusOne(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		seedPosts(t, db, 50)
		rdb, rec := recorded(db)

		var posts []Post
		require.NoError(t, rdb.Order("id").Find(&posts).Error)
		require.Len(t, posts, 50)
		for i, p := range posts {
			assert.EqualValues(t, i+1, p.Likes, "post %d likes", p.ID)
			assert.EqualValues(t, 2*(i+1), p.Views, "post %d views", p.ID)
			assert.Zero(t, p.Stars)
		}
		assert.Len(t, rec.statements(), 2, "one query for the posts, one for all their counters: %q", rec.statements())
		assert.Equal(t, 1, rec.count("slotted_counters", "GROUP BY"))

		var ptrs []*Post
		require.NoError(t, db.Order("id").Find(&ptrs).Error)
		assert.EqualValues(t, 50, ptrs[49].Likes, "slices of pointers are filled")

		for _, find := range []func(*gorm.DB, any) *gorm.DB{
			func(db *gorm.DB, p any) *gorm.DB { return db.First(p) },
			func(db *gorm.DB, p any) *gorm.DB { return db.Take(p, "id = ?", 1) },
			func(db *gorm.DB, p any) *gorm.DB { return db.Last(p) },
		} {
			var p Post
			require.NoError(t, find(db, &p).Error)
			assert.EqualValues(t, p.ID, p.Likes, "post %d", p.ID)
		}
	})
}

func TestAutoFillOff(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		seedPosts(t, db, 3)
		rdb, rec := recorded(db)
		var posts []Post
		require.NoError(t, slotted.WithoutFill(rdb).Find(&posts).Error)
		assert.Len(t, rec.statements(), 1)
		assert.Zero(t, posts[0].Likes)

		// Results that are not the model (a DTO) are left alone.
		var titles []struct {
			ID    uint
			Title string
		}
		require.NoError(t, db.Model(&Post{}).Find(&titles).Error)
		assert.Len(t, titles, 3)

		// A projection without the primary key cannot be filled; it is not an error.
		var noKey []Post
		require.NoError(t, db.Select("title").Find(&noKey).Error)
		assert.Zero(t, noKey[0].Likes)
	})
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		seedPosts(t, db, 2)
		var posts []Post
		require.NoError(t, db.Order("id").Find(&posts).Error)
		assert.Zero(t, posts[1].Likes, "DisableAutoFill turns filling off globally")
		require.NoError(t, slotted.WithFill(db).Order("id").Find(&posts).Error)
		assert.EqualValues(t, 2, posts[1].Likes, "WithFill turns it back on per query")
	}, slotted.Config{DisableAutoFill: true})
}

func TestCounterFieldIsNeverAParentColumn(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		// Stars has no gorm:"-", so AutoMigrate made a column; the plugin still keeps it out of the SQL.
		post := Post{Title: "stars", Stars: 9}
		require.NoError(t, db.Create(&post).Error)
		require.NoError(t, slotted.Add(db, &post, "stars", 3))
		assert.EqualValues(t, 12, post.Stars)
		require.NoError(t, db.Save(&post).Error)
		require.NoError(t, db.Model(&post).Updates(Post{Title: "renamed", Stars: 100}).Error)

		var column sql.NullInt64
		require.NoError(t, db.Table("posts").Select("stars").Where("id = ?", post.ID).Row().Scan(&column))
		assert.False(t, column.Valid, "the parent table's column is never written: %v", column)

		var got Post
		require.NoError(t, db.First(&got, post.ID).Error)
		assert.EqualValues(t, 12, got.Stars, "the value comes from the counter: 9 seeded by Create, then 3")
		assert.Equal(t, "renamed", got.Title)
	})
}

func TestLoad(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		seedPosts(t, db, 5)
		var posts []Post
		require.NoError(t, slotted.WithoutFill(db).Order("id").Find(&posts).Error)

		rdb, rec := recorded(db)
		require.NoError(t, slotted.Load(rdb, posts, "likes")) // a slice value: its elements are addressable
		assert.EqualValues(t, 5, posts[4].Likes)
		assert.Zero(t, posts[4].Views, "only the named counter is loaded")
		assert.Len(t, rec.statements(), 1)

		require.NoError(t, slotted.Load(db, &posts)) // every counter
		assert.EqualValues(t, 10, posts[4].Views)

		ptrs := []*Post{{ID: posts[0].ID}, nil, {ID: posts[2].ID}, {ID: posts[2].ID}}
		require.NoError(t, slotted.Load(db, &ptrs, "Likes"))
		assert.EqualValues(t, 1, ptrs[0].Likes)
		assert.EqualValues(t, 3, ptrs[2].Likes)
		assert.EqualValues(t, 3, ptrs[3].Likes, "duplicates are filled too")

		one := Post{ID: posts[1].ID, Likes: 99}
		require.NoError(t, slotted.Load(db, &one))
		assert.EqualValues(t, 2, one.Likes)

		fresh := Post{Title: "no counts"}
		require.NoError(t, db.Create(&fresh).Error)
		fresh.Likes = 99
		require.NoError(t, slotted.Load(db, &fresh))
		assert.Zero(t, fresh.Likes, "a counter without rows loads as 0")

		require.NoError(t, slotted.Load(db, []Post{}), "an empty slice is not an error")
	})
}

func TestLoadChunksLargeSlices(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := make([]Post, 2500)
		require.NoError(t, db.CreateInBatches(&posts, 500).Error)
		for _, i := range []int{0, 999, 1000, 2499} {
			require.NoError(t, slotted.Add(db, &posts[i], "likes", int64(i+1)))
		}
		rdb, rec := recorded(db)
		require.NoError(t, slotted.Load(rdb, posts, "likes"))
		assert.Len(t, rec.statements(), 3, "2500 records are read in 3 chunks of at most 1000")
		for _, i := range []int{0, 999, 1000, 2499} {
			assert.EqualValues(t, i+1, posts[i].Likes)
		}
		assert.Zero(t, posts[1].Likes)

		var all []Post
		rdb, rec = recorded(db)
		require.NoError(t, rdb.Find(&all).Error)
		assert.Len(t, rec.statements(), 4, "auto-fill chunks the same way")
	})
}
