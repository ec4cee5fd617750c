package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

var errRollback = errors.New("roll back")

func TestTransactionJoinsCaller(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "tx"}
		require.NoError(t, db.Create(&post).Error)

		rdb, rec := recorded(db)
		err := rdb.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, slotted.Add(tx, &post, "likes", 5))
			n, err := slotted.Count(tx, &post, "likes")
			require.NoError(t, err)
			assert.EqualValues(t, 5, n, "the transaction sees its own increment")
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.Zero(t, n, "the increment rolled back with the transaction")
		assert.Zero(t, counterRows(t, db))
		assert.Equal(t, 1, rec.count("INSERT INTO"), "one upsert, no retry")

		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			return slotted.Add(tx, &post, "likes", 3)
		}))
		n, err = slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 3, n, "committed")

		// Begin/Commit, and a DB with PrepareStmt on, behave the same.
		prepared := db.Session(&gorm.Session{PrepareStmt: true})
		tx := prepared.Begin()
		require.NoError(t, slotted.Increment(tx, &post, "likes"))
		require.NoError(t, tx.Rollback().Error)
		tx = prepared.Begin()
		require.NoError(t, slotted.Increment(tx, &post, "likes"))
		require.NoError(t, tx.Commit().Error)
		n, err = slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 4, n)
	})
}

func TestContextCancellation(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "ctx"}
		require.NoError(t, db.Create(&post).Error)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := slotted.Increment(db.WithContext(ctx), &post, "likes")
		require.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, post.Likes, "a failed write does not move the field")
		_, err = slotted.Count(db.WithContext(ctx), &post, "likes")
		require.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, counterRows(t, db))
	})
}
