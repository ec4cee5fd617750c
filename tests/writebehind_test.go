package tests

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

func newBuffer(t *testing.T, db *gorm.DB, opts slotted.BufferOptions) *slotted.Buffer {
	t.Helper()
	buf, err := slotted.NewBuffer(db, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = buf.Close(context.Background()) })
	return buf
}

// failInserts makes every upsert of the plugin fail while on is set.
func failInserts(t *testing.T, db *gorm.DB) *atomic.Bool {
	t.Helper()
	var on atomic.Bool
	require.NoError(t, db.Callback().Raw().Before("gorm:raw").Register("test:fail_inserts", func(tx *gorm.DB) {
		if on.Load() && strings.HasPrefix(tx.Statement.SQL.String(), "INSERT INTO") {
			tx.AddError(errInjected)
		}
	}))
	t.Cleanup(func() { _ = db.Callback().Raw().Remove("test:fail_inserts") })
	return &on
}

// waitFlushed blocks until nothing is pending (background flushes). The go test timeout bounds it.
func waitFlushed(buf *slotted.Buffer) {
	for buf.Stats().Pending > 0 {
		time.Sleep(time.Millisecond)
	}
}

// TestBufferExactTotals: 64 writers add to a hot record, fresh one-slot records and refs through a buffer
// flushed every 5ms; after Close every total is exact and every Add was written once.
func TestBufferExactTotals(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		const workers, rounds = 64, 50
		post := Post{Title: "wb"}
		require.NoError(t, db.Create(&post).Error)
		buf := newBuffer(t, db, slotted.BufferOptions{Interval: 5 * time.Millisecond, FlushAt: 16})
		errs := run(workers, func(w int) error {
			mine := Post{ID: post.ID}
			for i := 0; i < rounds; i++ {
				if err := buf.Add(&mine, "likes", int64(1+w%2)); err != nil {
					return err
				}
				tag := Tag{Name: fmt.Sprintf("wb-%02d", (w+i)%20)}
				if err := buf.Add(&tag, "uses", 1); err != nil {
					return err
				}
				if err := buf.AddRef(slotted.Ref{Type: "wb", ID: fmt.Sprint(i)}, -1); err != nil {
					return err
				}
			}
			if mine.Likes != int64(rounds*(1+w%2)) {
				return fmt.Errorf("field moved to %d", mine.Likes)
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.NoError(t, buf.Close(context.Background()))
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, rounds*workers*3/2, n)
		var uses int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "tags.uses").Select("SUM(count)").Scan(&uses).Error)
		assert.EqualValues(t, workers*rounds, uses)
		for i := 0; i < rounds; i++ {
			n, err := slotted.CountRef(db, slotted.Ref{Type: "wb", ID: fmt.Sprint(i)})
			require.NoError(t, err)
			require.EqualValues(t, -workers, n)
		}
		s := buf.Stats()
		assert.Zero(t, s.Pending)
		assert.Zero(t, s.PendingWrites)
		assert.EqualValues(t, 3*workers*rounds, s.Written)
		assert.Positive(t, s.Flushes)
		assert.Zero(t, s.FlushErrors)

		require.ErrorIs(t, buf.Add(&post, "likes", 1), slotted.ErrBufferClosed)
	})
}

// TestBufferFlushTriggers: deltas are written by the interval alone, and by the size bound alone.
func TestBufferFlushTriggers(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		ticking := newBuffer(t, db, slotted.BufferOptions{Interval: 20 * time.Millisecond, FlushAt: 1 << 20})
		require.NoError(t, ticking.AddRef(slotted.Ref{Type: "tick", ID: "1"}, 3))
		waitFlushed(ticking)
		n, err := slotted.CountRef(db, slotted.Ref{Type: "tick", ID: "1"})
		require.NoError(t, err)
		assert.EqualValues(t, 3, n, "written by the interval")

		sized := newBuffer(t, db, slotted.BufferOptions{Interval: time.Hour, FlushAt: 10})
		for i := 0; i < 9; i++ {
			require.NoError(t, sized.AddRef(slotted.Ref{Type: "size", ID: fmt.Sprint(i)}, 1))
		}
		assert.Equal(t, 9, sized.Stats().Pending, "below FlushAt, and the interval is an hour away")
		require.NoError(t, sized.AddRef(slotted.Ref{Type: "size", ID: "9"}, 1))
		waitFlushed(sized)
		var total int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "size").Select("SUM(count)").Scan(&total).Error)
		assert.EqualValues(t, 10, total, "written when FlushAt counters were pending")
	})
}

// TestBufferFailedFlush: a failing flush keeps its deltas (nothing written, nothing dropped), reports the
// error in Stats and OnError, and the next flush writes them exactly once.
func TestBufferFailedFlush(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		fail := failInserts(t, db)
		var reported atomic.Int32
		buf := newBuffer(t, db, slotted.BufferOptions{Interval: 5 * time.Millisecond, FlushAt: 1 << 20,
			OnError: func(err error) {
				if assert.ErrorIs(t, err, errInjected) {
					reported.Add(1)
				}
			}})
		fail.Store(true)
		errs := run(writers, func(w int) error {
			for i := 0; i < 20; i++ {
				if err := buf.AddRef(slotted.Ref{Type: "failing", ID: fmt.Sprint(i % 7)}, 1); err != nil {
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		for reported.Load() < 3 { // background flushes failed, and kept trying
			time.Sleep(time.Millisecond)
		}
		err := buf.Flush(context.Background())
		require.ErrorIs(t, err, errInjected)
		s := buf.Stats()
		assert.Equal(t, 7, s.Pending)
		assert.EqualValues(t, writers*20, s.PendingWrites, "nothing dropped")
		assert.GreaterOrEqual(t, s.FlushErrors, uint64(4))
		assert.ErrorIs(t, s.LastError, errInjected)
		assert.Zero(t, counterRows(t, db), "nothing written")

		fail.Store(false)
		require.NoError(t, buf.Flush(context.Background()))
		var total int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "failing").Select("SUM(count)").Scan(&total).Error)
		assert.EqualValues(t, writers*20, total, "every delta written once")
		assert.Nil(t, buf.Stats().LastError)
	})
}

// TestBufferBound: at MaxPending counters a new counter is refused with ErrBufferFull (and nothing of it is
// kept), deltas to pending counters are still taken; after a flush there is room again.
func TestBufferBound(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		fail := failInserts(t, db)
		fail.Store(true)
		buf := newBuffer(t, db, slotted.BufferOptions{Interval: time.Hour, MaxPending: 5})
		for i := 0; i < 5; i++ {
			require.NoError(t, buf.AddRef(slotted.Ref{Type: "bound", ID: fmt.Sprint(i)}, 1))
		}
		require.Error(t, buf.Flush(context.Background()), "the flush fails: the 5 stay pending")
		errs := run(writers, func(w int) error {
			if err := buf.AddRef(slotted.Ref{Type: "bound", ID: fmt.Sprint(w % 5)}, 1); err != nil {
				return err
			}
			return buf.AddRef(slotted.Ref{Type: "bound", ID: fmt.Sprint("new", w)}, 1)
		})
		for _, err := range errs {
			require.ErrorIs(t, err, slotted.ErrBufferFull)
		}
		assert.Equal(t, 5, buf.Stats().Pending)
		assert.EqualValues(t, 5+writers, buf.Stats().PendingWrites)

		fail.Store(false)
		require.NoError(t, buf.Flush(context.Background()))
		require.NoError(t, buf.AddRef(slotted.Ref{Type: "bound", ID: "after"}, 1), "room again")
		require.NoError(t, buf.Close(context.Background()))
		var total, rows int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "bound").Select("SUM(count)").Scan(&total).Error)
		assert.EqualValues(t, 5+writers+1, total)
		require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id LIKE ?", "bound", "new%").Count(&rows).Error)
		assert.Zero(t, rows, "refused deltas were not kept")
	})
}

func TestBufferBadInput(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		_, err := slotted.NewBuffer(db, slotted.BufferOptions{MaxPending: -1})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
		require.ErrorIs(t, db.Transaction(func(tx *gorm.DB) error {
			_, err := slotted.NewBuffer(tx)
			return err
		}), slotted.ErrInvalidConfig)

		buf := newBuffer(t, db, slotted.BufferOptions{Interval: time.Hour})
		require.ErrorIs(t, buf.Add(Post{ID: 1}, "likes", 1), slotted.ErrUnsupportedModel)
		require.ErrorIs(t, buf.Add(&Post{}, "likes", 1), slotted.ErrMissingPrimaryKey)
		require.ErrorIs(t, buf.Add(&Post{ID: 1}, "nope", 1), slotted.ErrUnknownCounter)
		require.ErrorIs(t, buf.AddRef(slotted.Ref{Type: "x"}, 1), slotted.ErrMissingPrimaryKey)
		ref := slotted.Ref{Type: "big", ID: "1"}
		require.NoError(t, buf.AddRef(ref, 1<<62))
		require.ErrorIs(t, buf.AddRef(ref, 1<<62), slotted.ErrDeltaOverflow)
		require.NoError(t, buf.Flush(context.Background()))
		n, err := slotted.CountRef(db, ref)
		require.NoError(t, err)
		assert.EqualValues(t, int64(1)<<62, n, "the refused delta was not kept")
		assert.Zero(t, counterRowsOf(t, db, "x", ""))
	})
}
