package tests

import (
	"testing"

	"github.com/slotted-go/slotted"
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

func TestFixSmoke(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		a := Topic{Title: "a"}
		require.NoError(t, db.Create(&a).Error)
		rs := []Reply{{TopicID: &a.ID, Published: true, Points: 12}, {TopicID: &a.ID, Points: 3}}
		require.NoError(t, db.Create(&rs).Error)
		require.NoError(t, db.Exec("INSERT INTO replies (topic_id, published, points, body) VALUES (?, ?, ?, ?)", a.ID, true, 5, "raw").Error)
		d, err := slotted.Fix(db, &a, slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		t.Logf("%+v", d)
		d, err = slotted.Fix(db, &a, slotted.FixOptions{})
		require.NoError(t, err)
		t.Logf("%+v %+v", d, a)
		requireTopicsExact(t, db, a.ID)
		d, err = slotted.Fix(db, &a, slotted.FixOptions{DryRun: true})
		require.NoError(t, err)
		require.Empty(t, d)
	})
}
