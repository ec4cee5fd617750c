package tests

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

func slotRows(t *testing.T, db *gorm.DB, ref slotted.Ref) int64 {
	t.Helper()
	var n int64
	require.NoError(t, slotted.Table(db).Where("record_type = ? AND record_id = ?", ref.Type, ref.ID).Count(&n).Error)
	return n
}

func TestCompactAndReset(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "compact"}
		require.NoError(t, db.Create(&post).Error)
		for i := 0; i < 200; i++ {
			require.NoError(t, slotted.Increment(db, &post, "likes"))
		}
		ref, err := slotted.RefOf(db, &post, "likes")
		require.NoError(t, err)
		require.Greater(t, slotRows(t, db, ref), int64(50))

		require.NoError(t, slotted.Compact(db, &post, "likes"))
		assert.EqualValues(t, 1, slotRows(t, db, ref))
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 200, n)

		require.NoError(t, slotted.Compact(db, &post, "likes"), "compacting a compacted counter is a no-op")
		require.NoError(t, slotted.Compact(db, &post, "views"), "and so is compacting one without rows")
		assert.EqualValues(t, 0, slotRows(t, db, slotted.Ref{Type: "posts.views", ID: ref.ID}))

		require.NoError(t, slotted.Reset(db, &post, "likes", 7))
		assert.EqualValues(t, 7, post.Likes)
		n, err = slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 7, n)
		require.NoError(t, slotted.Reset(db, &post, "views", -3), "reset of a counter without rows creates one")
		n, err = slotted.Count(db, &post, "views")
		require.NoError(t, err)
		assert.EqualValues(t, -3, n)
		require.NoError(t, slotted.Reset(db, &post, "likes", 0))
		assert.EqualValues(t, 0, slotRows(t, db, ref), "reset to 0 leaves no rows")

		raw := slotted.Ref{Type: "raw", ID: "1"}
		for i := 0; i < 20; i++ {
			require.NoError(t, slotted.AddRef(db, raw, 1))
		}
		require.NoError(t, slotted.CompactRef(db, raw))
		assert.EqualValues(t, 1, slotRows(t, db, raw))
		require.NoError(t, slotted.ResetRef(db, raw, 5))
		n, err = slotted.CountRef(db, raw)
		require.NoError(t, err)
		assert.EqualValues(t, 5, n)

		require.ErrorIs(t, slotted.Compact(db, &post, "nope"), slotted.ErrUnknownCounter)
		require.ErrorIs(t, slotted.Reset(db, &Post{}, "likes", 1), slotted.ErrMissingPrimaryKey)
		require.ErrorIs(t, slotted.CompactRef(db, slotted.Ref{}), slotted.ErrMissingPrimaryKey)
	})
}

func TestCompactInsideCallerTransaction(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		raw := slotted.Ref{Type: "tx", ID: "1"}
		for i := 0; i < 30; i++ {
			require.NoError(t, slotted.AddRef(db, raw, 1))
		}
		before := slotRows(t, db, raw)
		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, slotted.CompactRef(tx, raw))
			require.NoError(t, slotted.ResetRef(tx, raw, 100))
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		assert.Equal(t, before, slotRows(t, db, raw), "rolled back with the caller's transaction")
		n, err := slotted.CountRef(db, raw)
		require.NoError(t, err)
		assert.EqualValues(t, 30, n)
	})
}

// hammer runs writers that add +1 to refs until stop is closed and returns the number of successful adds per ref.
func hammer(t *testing.T, db *gorm.DB, refs []slotted.Ref, stop <-chan struct{}) func() []int64 {
	counts := make([]atomic.Int64, len(refs))
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := i % len(refs)
				if err := slotted.AddRef(db, refs[k], 1); err != nil {
					t.Errorf("increment: %v", err)
					return
				}
				counts[k].Add(1)
			}
		}()
	}
	return func() []int64 {
		wg.Wait()
		out := make([]int64, len(refs))
		for i := range counts {
			out[i] = counts[i].Load()
		}
		return out
	}
}

func TestCompactRacingWriters(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		ref := slotted.Ref{Type: "race", ID: "compact"}
		stop := make(chan struct{})
		wait := hammer(t, db, []slotted.Ref{ref}, stop)
		compactions := 0
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); compactions++ {
			require.NoError(t, slotted.CompactRef(db, ref))
		}
		close(stop)
		adds := wait()
		n, err := slotted.CountRef(db, ref)
		require.NoError(t, err)
		assert.Equal(t, adds[0], n, "no increment lost or counted twice across %d compactions", compactions)
		assert.Positive(t, adds[0])
	})
}

// TestResetRacingWriters checks Reset's promise with timestamps: increments that finished before the reset
// started are wiped, increments that started after it finished are counted, and the ones overlapping it are
// each counted or wiped whole.
func TestResetRacingWriters(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		ref := slotted.Ref{Type: "race", ID: "reset"}
		type span struct{ start, end time.Time }
		var mu sync.Mutex
		var spans []span
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					s := span{start: time.Now()}
					if err := slotted.AddRef(db, ref, 1); err != nil {
						t.Errorf("increment: %v", err)
						return
					}
					s.end = time.Now()
					mu.Lock()
					spans = append(spans, s)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(500 * time.Millisecond)
		resetStart := time.Now()
		require.NoError(t, slotted.ResetRef(db, ref, 1000))
		resetEnd := time.Now()
		wg.Wait()

		var after, overlapping int64
		for _, s := range spans {
			switch {
			case s.start.After(resetEnd):
				after++
			case s.end.Before(resetStart):
			default:
				overlapping++
			}
		}
		n, err := slotted.CountRef(db, ref)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, n, 1000+after, "every increment that began after the reset is counted")
		assert.LessOrEqual(t, n, 1000+after+overlapping, "no increment that ended before the reset survives")
		assert.Positive(t, after)
		t.Logf("%d increments, %d after the reset, %d overlapping it; count %d", len(spans), after, overlapping, n)
	})
}

func TestCompactAll(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		want := map[slotted.Ref]int64{}
		for i := 0; i < 25; i++ {
			typ := "bulk.a"
			if i%2 == 1 {
				typ = "bulk.b"
			}
			ref := slotted.Ref{Type: typ, ID: fmt.Sprintf("%03d", i)}
			for j := 0; j <= i%7; j++ { // counters with 1..7 rows' worth of increments
				require.NoError(t, slotted.AddRef(db, ref, 2))
				want[ref] += 2
			}
		}
		total := counterRows(t, db)

		// One record_type only, interrupted after the first batch and resumed.
		var seen []slotted.CompactProgress
		ctx, cancel := context.WithCancel(context.Background())
		prog, err := slotted.CompactAll(db.WithContext(ctx), slotted.CompactOptions{
			RecordType: "bulk.a", BatchSize: 3,
			Progress: func(p slotted.CompactProgress) { seen = append(seen, p); cancel() },
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, seen, 1)
		assert.Equal(t, 1, prog.Batches)
		prog, err = slotted.CompactAll(db, slotted.CompactOptions{RecordType: "bulk.a", BatchSize: 3, After: prog.Last})
		require.NoError(t, err)
		for ref := range want {
			rows := slotRows(t, db, ref)
			if ref.Type == "bulk.a" {
				assert.EqualValues(t, 1, rows, "%v compacted", ref)
			}
		}
		var bRows int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "bulk.b").Count(&bRows).Error)
		assert.Greater(t, bRows, int64(12), "other record types untouched")

		// Everything, with progress; a second run finds nothing to do.
		prog, err = slotted.CompactAll(db, slotted.CompactOptions{BatchSize: 4})
		require.NoError(t, err)
		assert.Positive(t, prog.RowsRemoved)
		assert.EqualValues(t, len(want), counterRows(t, db), "one row per counter")
		assert.Less(t, counterRows(t, db), total)
		prog, err = slotted.CompactAll(db)
		require.NoError(t, err)
		assert.Zero(t, prog.Counters)
		for ref, n := range want {
			got, err := slotted.CountRef(db, ref)
			require.NoError(t, err)
			assert.Equal(t, n, got, "%v", ref)
		}
		_, err = slotted.CompactAll(db, slotted.CompactOptions{BatchSize: -1})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
	})
}

// TestCompactAllRacing runs two bulk compactors at once, each with its own connection pool and plugin as two
// processes would have, while writers keep incrementing.
func TestCompactAllRacing(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		refs := make([]slotted.Ref, 30)
		for i := range refs {
			refs[i] = slotted.Ref{Type: "bulkrace", ID: fmt.Sprintf("%02d", i)}
		}
		stop := make(chan struct{})
		wait := hammer(t, db, refs, stop)
		var wg sync.WaitGroup
		var runs atomic.Int64
		for c := 0; c < 2; c++ {
			process := openRaw(t, dialect(db))
			require.NoError(t, process.Use(slotted.New(slotted.Config{DisableAutoMigrate: true})))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
					if _, err := slotted.CompactAll(process, slotted.CompactOptions{BatchSize: 7}); err != nil {
						t.Errorf("CompactAll: %v", err)
						return
					}
					runs.Add(1)
				}
			}()
		}
		wg.Wait()
		close(stop)
		adds := wait()
		for i, ref := range refs {
			n, err := slotted.CountRef(db, ref)
			require.NoError(t, err)
			assert.Equal(t, adds[i], n, "%v", ref)
		}
		t.Logf("%d bulk runs", runs.Load())
	})
}
