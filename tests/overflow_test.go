package tests

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// slotState returns a counter's slot rows as (slot -> count) and, on SQLite,
// fails if any count is stored as anything but an integer.
func slotState(t *testing.T, db *gorm.DB, ref slotted.Ref) map[int32]int64 {
	t.Helper()
	if dialect(db) == dbSQLite {
		var kinds []string
		require.NoError(t, db.Raw("SELECT DISTINCT typeof(count) FROM slotted_counters WHERE record_type = ? AND record_id = ?", ref.Type, ref.ID).Scan(&kinds).Error)
		for _, k := range kinds {
			require.Equal(t, "integer", k, "SQLite kept the slot an integer")
		}
	}
	var rows []slotted.SlottedCounter
	require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id = ?", ref.Type, ref.ID).Find(&rows).Error)
	out := map[int32]int64{}
	for _, r := range rows {
		out[r.Slot] = r.Count
	}
	return out
}

// TestOverflow: a slot, a compacted row or a total never wraps around int64
// or changes type. A write that would overflow a slot fails with ErrOverflow
// and writes nothing, Compact refuses a counter whose total does not fit,
// CompactAll leaves it as it is, and reads of such a total return ErrOverflow.
func TestOverflow(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		// Add past MaxInt64 and below MinInt64, on a one-slot counter.
		for _, c := range []struct {
			name         string
			start, delta int64
		}{{"max", math.MaxInt64 - 10, 100}, {"min", math.MinInt64 + 10, -100}, {"max exact", math.MaxInt64 - 10, 11}} {
			tag := Tag{Name: c.name}
			ref := slotted.Ref{Type: "tags.uses", ID: c.name}
			require.NoError(t, slotted.Add(db, &tag, "uses", c.start))
			err := slotted.Add(db, &tag, "uses", c.delta)
			require.ErrorIs(t, err, slotted.ErrOverflow, "%s: %v", c.name, err)
			assert.EqualValues(t, c.start, tag.Uses, "%s: the field did not move", c.name)
			assert.Equal(t, map[int32]int64{0: c.start}, slotState(t, db, ref), "%s: nothing written", c.name)
			n, err := slotted.CountRef(db, ref)
			require.NoError(t, err, "%s: the counter is still readable", c.name)
			assert.Equal(t, c.start, n)
			// The way back is open.
			require.NoError(t, slotted.Add(db, &tag, "uses", -c.delta/100))
		}

		// Two slots whose total does not fit in int64 (written directly: the plugin refuses to make one).
		big := slotted.Ref{Type: "posts.likes", ID: "9"}
		small := slotted.Ref{Type: "posts.likes", ID: "10"}
		require.NoError(t, slotted.Table(db).Create(&[]slotted.SlottedCounter{
			{RecordType: "posts.likes", RecordID: "9", Slot: 0, Count: math.MaxInt64 - 10},
			{RecordType: "posts.likes", RecordID: "9", Slot: 1, Count: 100},
			{RecordType: "posts.likes", RecordID: "10", Slot: 0, Count: 1},
			{RecordType: "posts.likes", RecordID: "10", Slot: 1, Count: 2},
		}).Error)
		before := slotState(t, db, big)

		require.ErrorIs(t, slotted.CompactRef(db, big), slotted.ErrOverflow)
		assert.Equal(t, before, slotState(t, db, big), "Compact wrote nothing")

		prog, err := slotted.CompactAll(db, slotted.CompactOptions{RecordType: "posts.likes"})
		require.NoError(t, err)
		assert.Equal(t, before, slotState(t, db, big), "CompactAll left the counter as it is")
		assert.Equal(t, map[int32]int64{0: 3}, slotState(t, db, small), "and compacted the others")
		assert.EqualValues(t, 1, prog.RowsRemoved)

		_, err = slotted.CountRef(db, big)
		require.ErrorIs(t, err, slotted.ErrOverflow)
		_, err = slotted.Count(db, &Post{ID: 9}, "likes")
		require.ErrorIs(t, err, slotted.ErrOverflow)
		require.ErrorIs(t, slotted.Load(db, &[]Post{{ID: 10}, {ID: 9}}), slotted.ErrOverflow)
		require.NoError(t, db.Create(&Post{ID: 9, Title: "overflowing"}).Error)
		var got []Post
		require.ErrorIs(t, db.Find(&got).Error, slotted.ErrOverflow, "auto-fill reports it")

		// The same below MinInt64.
		require.NoError(t, slotted.Table(db).Create(&[]slotted.SlottedCounter{
			{RecordType: "neg", RecordID: "1", Slot: 0, Count: math.MinInt64 + 10},
			{RecordType: "neg", RecordID: "1", Slot: 1, Count: -100},
		}).Error)
		neg := slotted.Ref{Type: "neg", ID: "1"}
		require.ErrorIs(t, slotted.CompactRef(db, neg), slotted.ErrOverflow)
		_, err = slotted.CountRef(db, neg)
		require.ErrorIs(t, err, slotted.ErrOverflow)

		// Slots that wrap in a running sum but whose total fits compact exactly.
		require.NoError(t, slotted.Table(db).Create(&[]slotted.SlottedCounter{
			{RecordType: "wrap", RecordID: "1", Slot: 0, Count: math.MaxInt64},
			{RecordType: "wrap", RecordID: "1", Slot: 1, Count: 5},
			{RecordType: "wrap", RecordID: "1", Slot: 2, Count: -10},
		}).Error)
		wrap := slotted.Ref{Type: "wrap", ID: "1"}
		require.NoError(t, slotted.CompactRef(db, wrap))
		assert.Equal(t, map[int32]int64{0: math.MaxInt64 - 5}, slotState(t, db, wrap))

		// Reset repairs an overflowing counter.
		require.NoError(t, slotted.ResetRef(db, big, 42))
		n, err := slotted.CountRef(db, big)
		require.NoError(t, err)
		assert.EqualValues(t, 42, n)
		require.NoError(t, db.Find(&got).Error)
	})
}
