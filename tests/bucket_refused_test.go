package tests

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// The writes that know only a counter's total row refuse a bucketed counter
// instead of counting its total but not its bucket; nothing is written.
func TestBucketedCounterRefusedByTotalOnlyWrites(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		migratePages(t, db)
		pages := []Page{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&pages).Error)
		rowsBefore := counterRows(t, db)

		require.ErrorIs(t, slotted.AddEach(db, &pages[0], map[string]int64{"views": 1}), slotted.ErrInvalidArgument)
		require.ErrorIs(t, slotted.AddMany(db, &pages, "views", 1), slotted.ErrInvalidArgument)
		require.ErrorIs(t, slotted.AddWhere(db.Model(&Page{}).Where("title = ?", "a"), "views", 1), slotted.ErrInvalidArgument)
		_, err := slotted.AddOnce(db, &pages[0], "views", 1, "user:1")
		require.ErrorIs(t, err, slotted.ErrInvalidArgument)
		_, err = slotted.RemoveOnce(db, &pages[0], "views", "user:1")
		require.ErrorIs(t, err, slotted.ErrInvalidArgument)
		buf, err := slotted.NewBuffer(db, slotted.BufferOptions{})
		require.NoError(t, err)
		require.ErrorIs(t, buf.Add(&pages[0], "views", 1), slotted.ErrInvalidArgument)
		require.NoError(t, buf.Close(context.Background()))

		require.Equal(t, rowsBefore, counterRows(t, db), "nothing written")
		// Add writes both rows.
		require.NoError(t, slotted.Add(db, &pages[0], "views", 1))
		require.Equal(t, rowsBefore+2, counterRows(t, db))
	})
}
