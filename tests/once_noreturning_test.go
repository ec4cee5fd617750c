package tests

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestOnceBatchWithoutReturning: without RETURNING (MySQL 8, TiDB, Vitess,
// or Config.DisableReturning) a batch's keys go in with one statement each
// and its removals are a locking read and one DELETE, in the batch's one
// transaction, with the same outcomes: 48 AddOnce of 16 keys apply 16, then
// 32 RemoveOnce of those keys and 16 new AddOnce remove 16 and apply 16.
func TestOnceBatchWithoutReturning(t *testing.T) {
	cfg := oneInFlight
	cfg.DisableReturning = true
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "no returning"}
		require.NoError(t, db.Create(&post).Error)
		rdb, rec := recorded(db)
		round := func(writes []func() error) {
			t.Helper()
			hold, started, release := held(1)
			installGate(t, db, hold)
			defer func() { _ = db.Callback().Raw().Remove("test:gate") }()
			first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
			<-started
			rest := queue(writes)
			waitQueued(t, db, int64(len(writes)))
			close(release)
			require.NoError(t, first()[0])
			for i, err := range rest() {
				require.NoError(t, err, "write %d", i)
			}
		}
		var applied, removed, added atomic.Int32
		adds := make([]func() error, 48)
		for i := range adds {
			adds[i] = func() error {
				ok, err := slotted.AddOnce(rdb, &Post{ID: post.ID}, "likes", 2, fmt.Sprintf("user:%d", i%16))
				if ok {
					applied.Add(1)
				}
				return err
			}
		}
		round(adds)
		assert.EqualValues(t, 16, applied.Load())
		assert.EqualValues(t, 1+2*16, countOf(t, db, &post))
		assert.Len(t, onceKeys(t, db), 16)
		mixed := make([]func() error, 48)
		for i := range mixed {
			mixed[i] = func() error {
				if i < 32 {
					ok, err := slotted.RemoveOnce(rdb, &Post{ID: post.ID}, "likes", fmt.Sprintf("user:%d", i%16))
					if ok {
						removed.Add(1)
					}
					return err
				}
				ok, err := slotted.AddOnce(rdb, &Post{ID: post.ID}, "likes", 1, fmt.Sprintf("new:%d", i))
				if ok {
					added.Add(1)
				}
				return err
			}
		}
		round(mixed)
		assert.EqualValues(t, 16, removed.Load())
		assert.EqualValues(t, 16, added.Load())
		assert.EqualValues(t, 2+16, countOf(t, db, &post), "two Increments, 16 new keys; the 16 removed keys' 2 each undone")
		assert.Len(t, onceKeys(t, db), 16, "the new keys only")
		assert.Zero(t, rec.count("RETURNING"), "no statement used RETURNING")
		assert.Positive(t, rec.count("INSERT", slotted.DefaultOnceTable))
	}, cfg)
}

// TestOnceWithoutReturningManyWriters: 64 goroutines on the same keys,
// AddOnce and RemoveOnce interleaved, without RETURNING: each key's adds
// and removes alternate (no add of a present key, no remove of an absent
// one), so the count equals what the applied calls say.
func TestOnceWithoutReturningManyWriters(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "hot"}
		require.NoError(t, db.Create(&post).Error)
		var net atomic.Int64
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 10 {
					key := fmt.Sprintf("k%d", (i+j)%8)
					if (i+j)%3 == 0 {
						ok, err := slotted.RemoveOnce(db, &Post{ID: post.ID}, "likes", key)
						if err != nil {
							t.Errorf("writer %d: %v", i, err)
							return
						}
						if ok {
							net.Add(-1)
						}
						continue
					}
					ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 1, key)
					if err != nil {
						t.Errorf("writer %d: %v", i, err)
						return
					}
					if ok {
						net.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, net.Load(), countOf(t, db, &post), "the count is what the applied calls say")
		assert.EqualValues(t, net.Load(), len(onceKeys(t, db)), "one key row per applied, not removed, key")
	}, slotted.Config{DisableReturning: true})
}
