package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

func TestBucketSmoke(t *testing.T) {
	clk := newClock(time.Time{})
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		clk.Set(time.Date(2026, 11, 23, 23, 59, 59, 999e6, time.UTC))
		migratePages(t, db)
		page := Page{Title: "a"}
		require.NoError(t, db.Create(&page).Error)
		require.NoError(t, slotted.Add(db, &page, "views", 3))
		clk.Set(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
		require.NoError(t, slotted.Add(db, &page, "views", 4))
		n, err := slotted.Count(db, &page, "views")
		require.NoError(t, err)
		assert.EqualValues(t, 7, n)
		day23 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		n, err = slotted.CountBetween(db, &page, "views", day23, day23.AddDate(0, 0, 1))
		require.NoError(t, err)
		assert.EqualValues(t, 3, n)
		s, err := slotted.Series(db, &page, "views", day23.AddDate(0, 0, -1), day23.AddDate(0, 0, 2))
		require.NoError(t, err)
		require.Len(t, s, 3)
		assert.EqualValues(t, []int64{0, 3, 4}, []int64{s[0].Count, s[1].Count, s[2].Count})
		var rows []slotted.SlottedCounter
		require.NoError(t, slotted.Table(db).Order("record_type").Find(&rows).Error)
		for _, r := range rows {
			t.Log(r.RecordType, r.RecordID, r.Slot, r.Count)
		}
	}, slotted.Config{Now: clk.Now})
}
