package tests

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

func TestCounterCacheSmoke(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		a, b := Topic{Title: "a"}, Topic{Title: "b"}
		require.NoError(t, db.Create(&a).Error)
		require.NoError(t, db.Create(&b).Error)
		rs := []Reply{{TopicID: &a.ID, Published: true, Points: 12}, {TopicID: &a.ID, Points: 3}, {TopicID: &b.ID, Points: 20}, {}}
		require.NoError(t, db.Create(&rs).Error)
		requireTopicsExact(t, db, a.ID, b.ID)
		require.NoError(t, db.Delete(&Reply{ID: rs[0].ID}).Error)
		requireTopicsExact(t, db, a.ID, b.ID)
		require.NoError(t, db.Model(&Reply{}).Where("topic_id = ?", a.ID).Update("topic_id", b.ID).Error)
		requireTopicsExact(t, db, a.ID, b.ID)
		require.NoError(t, db.Unscoped().Model(&Reply{}).Where("id = ?", rs[0].ID).Update("deleted_at", nil).Error)
		requireTopicsExact(t, db, a.ID, b.ID)
	})
}
