package tests

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// AddOnce coalesced: callers queued behind a statement in flight share one
// transaction, one key INSERT and one counter upsert.

// onceStatements counts the key INSERTs on the once table.
func onceStatements(t *testing.T, db *gorm.DB) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	require.NoError(t, db.Callback().Row().Before("gorm:row").Register("test:once_count", func(tx *gorm.DB) {
		if sql := tx.Statement.SQL.String(); strings.HasPrefix(sql, "INSERT") && strings.Contains(sql, slotted.DefaultOnceTable) {
			n.Add(1)
		}
	}))
	t.Cleanup(func() { _ = db.Callback().Row().Remove("test:once_count") })
	return &n
}

// TestAddOnceBatchDuplicates: 48 AddOnce queued behind a held statement, 16
// keys three times each: one statement inserts the keys, the first of each
// key is applied and the two others are not, and the count moves by 16.
func TestAddOnceBatchDuplicates(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "dups"}
		require.NoError(t, db.Create(&post).Error)
		keys := onceStatements(t, db)
		hold, started, release := held(1)
		installGate(t, db, hold)
		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		var applied atomic.Int32
		writes := make([]func() error, 48)
		for i := range writes {
			writes[i] = func() error {
				p := Post{ID: post.ID}
				ok, err := slotted.AddOnce(db, &p, "likes", 1, fmt.Sprintf("user:%d", i%16))
				if ok {
					applied.Add(1)
					if p.Likes != 1 {
						return fmt.Errorf("applied, but the field is %d", p.Likes)
					}
				}
				return err
			}
		}
		rest := queue(writes)
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			require.NoError(t, err, "write %d", i)
		}
		assert.EqualValues(t, 16, applied.Load())
		assert.EqualValues(t, 1+16, countOf(t, db, &post))
		assert.Len(t, onceKeys(t, db), 16)
		assert.EqualValues(t, 1, keys.Load(), "one INSERT for the 48 keys")
	}, oneInFlight)
}

// TestAddOnceSameKeyManyWriters: 64 goroutines, one key, repeated: applied
// exactly once in all, on a plain and a bucketed counter.
func TestAddOnceSameKeyManyWriters(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		require.NoError(t, db.AutoMigrate(&Page{}))
		page := Page{Title: "hot"}
		require.NoError(t, db.Create(&page).Error)
		var applied [2]atomic.Int32
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 5 {
					for c, counter := range []string{"likes", "views"} {
						p := Page{ID: page.ID}
						ok, err := slotted.AddOnce(db, &p, counter, 1, fmt.Sprintf("k%d", j))
						if err != nil {
							t.Errorf("writer %d: %v", i, err)
							return
						}
						if ok {
							applied[c].Add(1)
						}
					}
				}
			}()
		}
		wg.Wait()
		assert.EqualValues(t, 5, applied[0].Load())
		assert.EqualValues(t, 5, applied[1].Load())
		requireCounts(t, db, "likes", page.ID, 5)
		requireCounts(t, db, "views", page.ID, 5)
	}, slotted.Config{Now: func() time.Time { return writePathDay }})
}

// TestAddOnceBatchFailure: the batch carrying 24 AddOnce and 24 Increment
// fails: every caller gets the error, no key is recorded, nothing counted;
// the same keys apply afterwards.
func TestAddOnceBatchFailure(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "fail"}
		require.NoError(t, db.Create(&post).Error)
		hold, started, release := held(1)
		installGate(t, db, func(n int32, tx *gorm.DB) {
			hold(n, tx)
			if n == 2 {
				tx.AddError(errInjected)
			}
		})
		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		writes := make([]func() error, 48)
		for i := range writes {
			writes[i] = func() error {
				p := Post{ID: post.ID}
				if i%2 == 0 {
					return slotted.Increment(db, &p, "likes")
				}
				ok, err := slotted.AddOnce(db, &p, "likes", 1, fmt.Sprintf("user:%d", i))
				if ok {
					return fmt.Errorf("applied in a failed batch")
				}
				return err
			}
		}
		rest := queue(writes)
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			require.ErrorIs(t, err, errInjected, "write %d", i)
		}
		assert.EqualValues(t, 1, countOf(t, db, &post))
		assert.Empty(t, onceKeys(t, db))
		for i := 1; i < 48; i += 2 {
			ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 1, fmt.Sprintf("user:%d", i))
			require.NoError(t, err)
			require.True(t, ok)
		}
		assert.EqualValues(t, 1+24, countOf(t, db, &post))
	}, oneInFlight)
}

// TestAddOnceBatchOverflow: an AddOnce that would overflow its counter,
// batched with 47 others: it fails alone with ErrOverflow and records no key;
// the others are applied.
func TestAddOnceBatchOverflow(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		require.NoError(t, db.AutoMigrate(&Page{}))
		pages := []Page{{Title: "hot"}, {Title: "full"}}
		require.NoError(t, db.Create(&pages).Error)
		for slot := range 4 { // every slot of the full page's likes near the top
			require.NoError(t, slotted.Table(db).Create(&slotted.SlottedCounter{RecordType: "pages.likes", RecordID: slotted.Key(fmt.Sprint(pages[1].ID)), Slot: int32(slot), Count: math.MaxInt64 - 1}).Error)
		}
		hold, started, release := held(1)
		installGate(t, db, hold)
		first := queue([]func() error{func() error { p := Page{ID: pages[0].ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		writes := make([]func() error, 48)
		for i := range writes {
			writes[i] = func() error {
				id := pages[0].ID
				if i == 30 {
					id = pages[1].ID
				}
				ok, err := slotted.AddOnce(db, &Page{ID: id}, "likes", 2, fmt.Sprintf("user:%d", i))
				if err == nil && !ok {
					return fmt.Errorf("not applied")
				}
				return err
			}
		}
		rest := queue(writes)
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			if i == 30 {
				require.ErrorIs(t, err, slotted.ErrOverflow)
				continue
			}
			require.NoError(t, err, "write %d", i)
		}
		assert.EqualValues(t, 1+47*2, rowSum(t, db, "pages.likes", pages[0].ID))
		var full int64
		require.NoError(t, slotted.Table(db).Where("record_type = ? AND count = ?", "pages.likes", int64(math.MaxInt64-1)).Count(&full).Error)
		assert.EqualValues(t, 4, full, "the overflowing AddOnce wrote nothing")
		assert.Len(t, onceKeys(t, db), 47)
	}, oneInFlight)
}

// TestRemoveOnceBatch: 32 RemoveOnce (16 keys twice) and 16 AddOnce queued
// behind a held statement share one transaction: one DELETE … RETURNING
// removes each key once (the first queued), the AddOnce keys go in, and the
// count moves by exactly what was removed and added.
func TestRemoveOnceBatch(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "undo"}
		require.NoError(t, db.Create(&post).Error)
		for i := range 16 {
			ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 2, fmt.Sprintf("user:%d", i))
			require.NoError(t, err)
			require.True(t, ok)
		}
		var deletes atomic.Int32
		require.NoError(t, db.Callback().Row().Before("gorm:row").Register("test:delete_count", func(tx *gorm.DB) {
			if sql := tx.Statement.SQL.String(); strings.HasPrefix(sql, "DELETE") && strings.Contains(sql, slotted.DefaultOnceTable) {
				deletes.Add(1)
			}
		}))
		t.Cleanup(func() { _ = db.Callback().Row().Remove("test:delete_count") })
		hold, started, release := held(1)
		installGate(t, db, hold)
		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		var removed, added atomic.Int32
		writes := make([]func() error, 48)
		for i := range writes {
			writes[i] = func() error {
				p := Post{ID: post.ID}
				if i < 32 {
					ok, err := slotted.RemoveOnce(db, &p, "likes", fmt.Sprintf("user:%d", i%16))
					if ok {
						removed.Add(1)
						if p.Likes != -2 {
							return fmt.Errorf("removed, but the field moved by %d", p.Likes)
						}
					}
					return err
				}
				ok, err := slotted.AddOnce(db, &p, "likes", 1, fmt.Sprintf("new:%d", i))
				if ok {
					added.Add(1)
				}
				return err
			}
		}
		rest := queue(writes)
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			require.NoError(t, err, "write %d", i)
		}
		assert.EqualValues(t, 16, removed.Load())
		assert.EqualValues(t, 16, added.Load())
		assert.EqualValues(t, 1+16, countOf(t, db, &post))
		assert.Len(t, onceKeys(t, db), 16, "the new keys only")
		assert.EqualValues(t, 1, deletes.Load(), "one DELETE for the 32 removals")
	}, oneInFlight)
}

// TestOnceAddRemoveSameKeyOneQueue: AddOnce then RemoveOnce of one key,
// queued together, apply in queue order (added, then removed), and the
// reverse order removes nothing and adds.
func TestOnceAddRemoveSameKeyOneQueue(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "order"}
		require.NoError(t, db.Create(&post).Error)
		for _, addFirst := range []bool{true, false} {
			key := fmt.Sprintf("k:%v", addFirst)
			hold, started, release := held(1)
			installGate(t, db, hold)
			first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
			<-started
			var addOK, removeOK atomic.Bool
			add := func() error {
				ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 1, key)
				addOK.Store(ok)
				return err
			}
			remove := func() error {
				ok, err := slotted.RemoveOnce(db, &Post{ID: post.ID}, "likes", key)
				removeOK.Store(ok)
				return err
			}
			ops := []func() error{remove, add}
			if addFirst {
				ops = []func() error{add, remove}
			}
			done0 := queue(ops[:1])
			waitQueued(t, db, 1)
			done1 := queue(ops[1:])
			waitQueued(t, db, 2)
			close(release)
			require.NoError(t, first()[0])
			require.NoError(t, done0()[0])
			require.NoError(t, done1()[0])
			assert.True(t, addOK.Load(), "add first %v", addFirst)
			assert.Equal(t, addFirst, removeOK.Load(), "add first %v", addFirst)
			_ = db.Callback().Raw().Remove("test:gate")
		}
		// +1 (held) +1 -1 ; +1 (held) +1
		assert.EqualValues(t, 3, countOf(t, db, &post))
	}, oneInFlight)
}
