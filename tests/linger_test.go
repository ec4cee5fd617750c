package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// lingerHold is how long the gate holds the first statement: Linger waits at most a quarter of the
// recent statement time, so the promoted leader may linger up to about 100ms here, far more than a
// returning caller needs even on a loaded machine.
const lingerHold = 400 * time.Millisecond

// lingerChoreography: a statement of X alone is held while 8 callers queue, each to write twice in a
// row; the next statement carries their first writes, and when it ends they all return at once. Without
// Linger the first to return finds nothing in flight and writes alone, and the others queue behind it (the
// pattern that halves the mean batch of many processes with a few writers each). With Linger it waits for
// the 8 and writes them in one statement.
func lingerChoreography(t *testing.T, db *gorm.DB) (statements, writes uint64) {
	post := Post{Title: "linger"}
	require.NoError(t, db.Create(&post).Error)
	on, started, release := held(1)
	installGate(t, db, on)
	before := stats(t, db)
	inc := func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }

	x := queue([]func() error{inc})
	<-started
	twice := make([]func() error, 8)
	for i := range twice {
		twice[i] = func() error {
			if err := inc(); err != nil {
				return err
			}
			return inc()
		}
	}
	rest := queue(twice)
	waitQueued(t, db, 8)
	time.Sleep(lingerHold)
	close(release)
	require.NoError(t, x()[0])
	for _, err := range rest() {
		require.NoError(t, err)
	}
	n, err := slotted.Count(db, &post, "likes")
	require.NoError(t, err)
	assert.EqualValues(t, 17, n)
	after := stats(t, db)
	assert.Zero(t, after.Waiting)
	return after.Batches - before.Batches, after.BatchedWrites - before.BatchedWrites
}

// TestCoalescedLinger: callers returning from one statement together are written together again.
func TestCoalescedLinger(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		statements, writes := lingerChoreography(t, db)
		assert.EqualValues(t, 3, statements, "X's held statement, the 8 first writes, the 8 second writes")
		assert.EqualValues(t, 17, writes)
	}, slotted.Config{MaxInFlight: 1, Linger: time.Hour})
}

// TestCoalescedLingerOff: Linger -1 writes what is queued at once (the contrast to TestCoalescedLinger).
func TestCoalescedLingerOff(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		statements, writes := lingerChoreography(t, db)
		assert.GreaterOrEqual(t, statements, uint64(4), "X's, the 8 first writes, then the second writes in two or more")
		assert.EqualValues(t, 17, writes)
	}, slotted.Config{MaxInFlight: 1, Linger: -1})
}

// TestCoalescedLingerCancelled: a promoted leader whose context ends while it lingers writes nothing,
// returns its context's error and hands over; the coalescer goes on writing afterwards.
func TestCoalescedLingerCancelled(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "linger-cancel"}
		require.NoError(t, db.Create(&post).Error)
		on, started, release := held(1)
		installGate(t, db, on)
		inc := func(db *gorm.DB) error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }

		first := queue([]func() error{func() error { return inc(db) }})
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b := queue([]func() error{func() error { return inc(db.WithContext(ctx)) }})
		waitQueued(t, db, 1)
		time.Sleep(lingerHold)
		close(release)
		require.NoError(t, first()[0])
		// B is promoted and lingers for a second caller (the first one's) that never comes, for up to
		// lingerHold/4; it is cancelled well within that.
		time.Sleep(lingerHold / 20)
		cancel()
		require.ErrorIs(t, b()[0], context.Canceled)

		require.NoError(t, inc(db))
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n, "the first write and the last; B's wrote nothing")
		assert.Zero(t, stats(t, db).Waiting)
	}, slotted.Config{MaxInFlight: 1, Linger: time.Hour})
}
