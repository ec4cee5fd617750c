package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestDeltaOverflowIsOverflow: ErrDeltaOverflow is a kind of ErrOverflow, so
// one errors.Is(err, ErrOverflow) catches every int64 overflow, and nothing
// is written.
func TestDeltaOverflowIsOverflow(t *testing.T) {
	require.ErrorIs(t, slotted.ErrDeltaOverflow, slotted.ErrOverflow)
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "p"}
		require.NoError(t, db.Create(&post).Error)
		err := slotted.AddEach(db, &post, map[string]int64{"likes": 1 << 62, "Likes": 1 << 62})
		require.ErrorIs(t, err, slotted.ErrDeltaOverflow)
		require.ErrorIs(t, err, slotted.ErrOverflow)
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		require.Zero(t, n, "nothing written")

		buf := newBuffer(t, db, slotted.BufferOptions{Interval: time.Hour})
		ref := slotted.Ref{Type: "big", ID: "1"}
		require.NoError(t, buf.AddRef(ref, 1<<62))
		err = buf.AddRef(ref, 1<<62)
		require.ErrorIs(t, err, slotted.ErrDeltaOverflow)
		require.ErrorIs(t, err, slotted.ErrOverflow)
		require.NoError(t, buf.Flush(context.Background()))
		n, err = slotted.CountRef(db, ref)
		require.NoError(t, err)
		require.EqualValues(t, int64(1)<<62, n, "the refused delta was not kept")
	})
}
