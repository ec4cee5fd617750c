package tests

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestCounterCacheWeightWithDeleted: Weight (a published reply counts 3) and
// WithDeleted with Sum and Weight (every reply's points twice, soft-deleted or
// not) through every change kind, a rollback, and Fix.
func TestCounterCacheWeightWithDeleted(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		declareExtraCaches(t, db)
		ids := newTopics(t, db, 2)
		a, b := ids[0], ids[1]
		want := func(weighted, ever int64, id uint) {
			t.Helper()
			assert.Equal(t, extraTruth{weighted, ever}, extraCountersOf(t, db, id))
			requireTopicsExact(t, db, a, b)
		}

		r := Reply{TopicID: ptr(a), Published: true, Points: 5}
		require.NoError(t, db.Create(&r).Error)
		want(3, 10, a)
		batch := []Reply{{TopicID: ptr(a), Points: 1}, {TopicID: ptr(b), Published: true, Points: 2}}
		require.NoError(t, db.Create(&batch).Error)
		want(3, 12, a)
		want(3, 4, b)

		// Soft delete: gone from the weighted count, kept by WithDeleted.
		require.NoError(t, db.Delete(&r).Error)
		want(0, 12, a)
		// Restore.
		require.NoError(t, db.Unscoped().Model(&Reply{}).Where("id = ?", r.ID).Update("deleted_at", nil).Error)
		want(3, 12, a)
		// Soft delete by condition, then a change of a soft-deleted row's points and topic.
		require.NoError(t, db.Where("topic_id = ? AND points = ?", a, 5).Delete(&Reply{}).Error)
		want(0, 12, a)
		require.NoError(t, db.Unscoped().Model(&Reply{}).Where("id = ?", r.ID).Updates(map[string]any{"points": 7, "topic_id": b}).Error)
		want(0, 2, a)
		want(3, 18, b)
		// Hard delete of the soft-deleted row: WithDeleted uncounts it.
		require.NoError(t, db.Unscoped().Delete(&Reply{}, r.ID).Error)
		want(3, 4, b)
		// Condition flip and move of live rows.
		require.NoError(t, db.Model(&Reply{}).Where("id = ?", batch[0].ID).Updates(map[string]any{"published": true, "topic_id": b}).Error)
		want(0, 0, a)
		want(6, 6, b)

		// A rollback leaves every counter as it was.
		require.Error(t, db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Create(&Reply{TopicID: ptr(a), Published: true, Points: 9}).Error)
			require.NoError(t, tx.Delete(&Reply{}, batch[1].ID).Error)
			require.NoError(t, tx.Unscoped().Delete(&Reply{}, batch[0].ID).Error)
			return errors.New("roll back")
		}))
		want(0, 0, a)
		want(6, 6, b)

		// Fix repairs drift the callbacks cannot see: a raw soft delete is no
		// drift for WithDeleted, a raw hard delete and a raw insert are.
		require.NoError(t, db.Exec("UPDATE replies SET deleted_at = CURRENT_TIMESTAMP WHERE id = ?", batch[1].ID).Error)
		require.NoError(t, db.Exec("INSERT INTO replies (topic_id, published, points, body) VALUES (?, ?, ?, 'raw')", a, true, 4).Error)
		require.NoError(t, db.Exec("DELETE FROM replies WHERE id = ?", batch[0].ID).Error)
		drift, err := slotted.Fix(db, &[]Topic{{ID: a}, {ID: b}})
		require.NoError(t, err)
		got := map[string]int64{}
		for _, d := range drift {
			if d.Counter == "weighted" || d.Counter == "ever" {
				got[d.Counter+"/"+d.Ref.ID] = d.Actual - d.Stored
			}
		}
		ka, kb := func(c string) string { return c + "/" + uintID(a) }, func(c string) string { return c + "/" + uintID(b) }
		assert.Equal(t, map[string]int64{ka("weighted"): 3, ka("ever"): 8, kb("weighted"): -6, kb("ever"): -2}, got)
		requireTopicsExact(t, db, a, b)
	})
}

func uintID(id uint) string { return strconv.FormatUint(uint64(id), 10) }

// TestCounterCacheWeightZero: Weight 0, CacheOptions' zero value, counts
// each child once, as no Weight does.
func TestCounterCacheWeightZero(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		require.NoError(t, slotted.CounterCache(db, &Topic{}, "Replies", "weighted", slotted.CacheOptions{Weight: 0}))
		ids := newTopics(t, db, 1)
		require.NoError(t, db.Create(&[]Reply{{TopicID: ptr(ids[0])}, {TopicID: ptr(ids[0]), Published: true}}).Error)
		n, err := slotted.Count(db, &Topic{ID: ids[0]}, "weighted")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)
	})
}
