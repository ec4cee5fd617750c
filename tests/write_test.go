package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

func TestIncrementDecrementAdd(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "hello"}
		require.NoError(t, db.Create(&post).Error)

		require.NoError(t, slotted.Increment(db, &post, "likes"))
		require.NoError(t, slotted.Increment(db, &post, "Likes")) // Go field name works too
		require.NoError(t, slotted.Add(db, &post, "likes", 40))
		require.NoError(t, slotted.Decrement(db, &post, "likes"))
		assert.EqualValues(t, 41, post.Likes, "in-memory field moves with each write")

		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 41, n)

		n, err = slotted.Count(db, post, "views") // a value works for reads
		require.NoError(t, err)
		assert.Zero(t, n, "no rows means 0")

		require.NoError(t, slotted.Add(db, &post, "views", -7))
		n, err = slotted.Count(db, &post, "views")
		require.NoError(t, err)
		assert.EqualValues(t, -7, n, "counters may go below zero")
		assert.EqualValues(t, -7, post.Views)
	})
}

func TestAddZeroWritesNothing(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "zero"}
		require.NoError(t, db.Create(&post).Error)
		rdb, rec := recorded(db)
		require.NoError(t, slotted.Add(rdb, &post, "likes", 0))
		assert.Empty(t, rec.statements())
		assert.Zero(t, counterRows(t, db))
	})
}

func TestSlotsSpreadWrites(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "spread"}
		require.NoError(t, db.Create(&post).Error)
		for i := 0; i < 300; i++ {
			require.NoError(t, slotted.Increment(db, &post, "likes"))
			require.NoError(t, slotted.Increment(db, &post, "views"))
		}
		var likeRows, viewRows int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.likes").Count(&likeRows).Error)
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.views").Count(&viewRows).Error)
		// 300 uniform draws from 100 slots leave ~95 distinct; from 4 slots all 4.
		assert.Greater(t, likeRows, int64(60))
		assert.LessOrEqual(t, likeRows, int64(100))
		assert.EqualValues(t, 4, viewRows, "the slots:4 tag option bounds the rows")

		var maxSlot int32
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.likes").Select("MAX(slot)").Scan(&maxSlot).Error)
		assert.Less(t, maxSlot, int32(100), "slots are 0..N-1")
	})
}

func TestRefsAndRecordTypes(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "refs"}
		require.NoError(t, db.Create(&post).Error)

		ref, err := slotted.RefOf(db, &post, "likes")
		require.NoError(t, err)
		assert.Equal(t, slotted.Ref{Type: "posts.likes", ID: itoa(post.ID), Slots: slotted.DefaultSlots}, ref)

		ref, err = slotted.RefOf(db, &post, "stars")
		require.NoError(t, err)
		assert.Equal(t, "post_stars", ref.Type, "the type: tag option fixes record_type")

		// A Ref and the model name the same counter.
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "posts.likes", ID: itoa(post.ID)}, 5))
		require.NoError(t, slotted.Increment(db, &post, "likes"))
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 6, n)

		// The original pattern's raw counters: record_type = 123, record_id = 456.
		raw := slotted.Ref{Type: "123", ID: "456"}
		for i := 0; i < 3; i++ {
			require.NoError(t, slotted.AddRef(db, raw, 1))
		}
		n, err = slotted.CountRef(db, raw)
		require.NoError(t, err)
		assert.EqualValues(t, 3, n)
		n, err = slotted.CountRef(db, slotted.Ref{Type: "123", ID: "457"})
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}
