package tests

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// One write path: every write API, on a plain counter (likes) and a bucketed
// one (views, buckets:day), from 48 goroutines, in and out of transactions.

var writePathDay = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// rowSum sums the slot rows of one record_type and record_id.
func rowSum(t *testing.T, db *gorm.DB, typ string, id uint) int64 {
	t.Helper()
	var n int64
	require.NoError(t, slotted.Table(db).Select("COALESCE(SUM(count), 0)").
		Where("record_type = ? AND record_id = ?", typ, fmt.Sprint(id)).Scan(&n).Error)
	return n
}

// requireCounts checks a counter's total rows, and for the bucketed one the
// day's bucket rows, of page id.
func requireCounts(t *testing.T, db *gorm.DB, counter string, id uint, want int64) {
	t.Helper()
	require.EqualValues(t, want, rowSum(t, db, "pages."+counter, id), "%s total of page %d", counter, id)
	if counter == "views" {
		require.EqualValues(t, want, rowSum(t, db, "pages.views@2026-11-23", id), "views bucket of page %d", id)
	}
}

// retryTx runs the caller's transaction again when it lost a lock conflict
// (rolled back whole: nothing of it was written), as an application would.
func retryTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	for attempt := 0; ; attempt++ {
		err := db.Transaction(fn)
		if err == nil || slotted.ConflictOf(err) == slotted.NoConflict || attempt == 20 {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
}

func TestWritePathEveryAPI(t *testing.T) {
	for _, counter := range []string{"likes", "views"} {
		t.Run(counter, func(t *testing.T) {
			testEachDB(t, func(t *testing.T, db *gorm.DB) {
				require.NoError(t, db.AutoMigrate(&Page{}))
				pages := []Page{{Title: "a"}, {Title: "b"}}
				require.NoError(t, db.Create(&pages).Error)
				buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: 20 * time.Millisecond})
				require.NoError(t, err)
				const writers = 48
				run := time.Now().UnixNano() // the once table outlives the test's schema
				var wg sync.WaitGroup
				errs := make(chan error, writers*16)
				for i := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						p0, p1 := Page{ID: pages[0].ID}, Page{ID: pages[1].ID}
						both := []Page{{ID: pages[0].ID}, {ID: pages[1].ID}}
						step := 0
						check := func(err error) {
							step++
							if err != nil {
								err = fmt.Errorf("step %d: %w", step, err)
							}
							errs <- err
						}
						once := func(applied bool, err error) error {
							if err == nil && !applied {
								err = fmt.Errorf("AddOnce/RemoveOnce not applied")
							}
							return err
						}
						check(slotted.Increment(db, &p0, counter))                                                    // p0 +1
						check(slotted.Add(db, &p0, counter, 2))                                                       // p0 +2
						check(slotted.AddEach(db, &p0, map[string]int64{counter: 1}))                                 // p0 +1
						check(slotted.AddMany(db, both, counter, 1))                                                  // p0, p1 +1
						check(slotted.AddWhere(db.Model(&Page{}).Where("id IN ?", []uint{p0.ID, p1.ID}), counter, 1)) // p0, p1 +1
						check(once(slotted.AddOnce(db, &p1, counter, 1, fmt.Sprintf("k:%d:%d", run, i))))             // p1 +1
						applied, err := slotted.AddOnce(db, &p1, counter, 1, fmt.Sprintf("k:%d:%d", run, i))
						if err == nil && applied {
							err = fmt.Errorf("AddOnce applied a key twice")
						}
						check(err)
						check(once(slotted.AddOnce(db, &p1, counter, 5, fmt.Sprintf("r:%d:%d", run, i))))
						check(once(slotted.RemoveOnce(db, &p1, counter, fmt.Sprintf("r:%d:%d", run, i)))) // net 0
						check(buf.Add(&p1, counter, 1))                                                   // p1 +1
						// p0 +1, p1 +1, in key order: two writes to one counter in one
						// transaction, at random slots, deadlock with each other's.
						check(retryTx(db, func(tx *gorm.DB) error {
							if err := once(slotted.AddOnce(tx, &p0, counter, 1, fmt.Sprintf("tx:%d:%d", run, i))); err != nil {
								return err
							}
							return slotted.AddEach(tx, &p1, map[string]int64{counter: 1})
						}))
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				require.NoError(t, buf.Close(context.Background()))
				requireCounts(t, db, counter, pages[0].ID, writers*7)
				requireCounts(t, db, counter, pages[1].ID, writers*5)
			}, slotted.Config{Now: func() time.Time { return writePathDay }})
		})
	}
}

// TestBucketedWritesAccepted: the writes that refused a bucketed counter
// write its total and its bucket; Buffer.Add counts into the bucket of the
// instant it was called, not of the flush.
func TestBucketedWritesAccepted(t *testing.T) {
	clock := newClock(time.Date(2026, 11, 23, 23, 59, 59, 0, time.UTC))
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		clock.Set(time.Date(2026, 11, 23, 23, 59, 59, 0, time.UTC))
		migratePages(t, db)
		pages := []Page{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&pages).Error)

		buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: time.Hour})
		require.NoError(t, err)
		require.NoError(t, buf.Add(&pages[0], "views", 7))
		require.NoError(t, slotted.AddEach(db, &pages[0], map[string]int64{"views": 1, "likes": 2}))
		require.NoError(t, slotted.AddMany(db, &pages, "views", 1))
		require.NoError(t, slotted.AddWhere(db.Model(&Page{}).Where("title = ?", "a"), "views", 1))
		applied, err := slotted.AddOnce(db, &pages[0], "views", 1, "user:1")
		require.NoError(t, err)
		require.True(t, applied)
		clock.Set(time.Date(2026, 11, 24, 0, 0, 1, 0, time.UTC)) // the flush runs the next day
		require.NoError(t, buf.Close(context.Background()))
		removed, err := slotted.RemoveOnce(db, &pages[0], "views", "user:1") // the undo counts into its own day
		require.NoError(t, err)
		require.True(t, removed)

		id := pages[0].ID
		assert.EqualValues(t, 7+1+1+1+1-1, rowSum(t, db, "pages.views", id))
		assert.EqualValues(t, 7+1+1+1+1, rowSum(t, db, "pages.views@2026-11-23", id))
		assert.EqualValues(t, -1, rowSum(t, db, "pages.views@2026-11-24", id))
		assert.EqualValues(t, 2, rowSum(t, db, "pages.likes", id))
		assert.EqualValues(t, 1, rowSum(t, db, "pages.views@2026-11-23", pages[1].ID))
		assert.EqualValues(t, 1, rowSum(t, db, "pages.views", pages[1].ID))
		assert.EqualValues(t, 7+1+1+1-1, pages[0].Views, "the in-memory field moved with every write but AddWhere's")
	}, slotted.Config{Now: clock.Now})
}

// TestWritePathOverflowMidBatch: a bucketed write that would overflow its
// counter, queued with 48 others behind a held statement, fails alone with
// ErrOverflow and writes neither of its rows; every other write lands, in
// its total and its bucket.
func TestWritePathOverflowMidBatch(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.AutoMigrate(&Page{}))
		pages := []Page{{Title: "hot"}, {Title: "full"}}
		require.NoError(t, db.Create(&pages).Error)
		// Every slot of the full page's bucket is near the top; its total is not, so only the bucket row overflows.
		for slot := range 8 {
			require.NoError(t, slotted.Table(db).Create(&slotted.SlottedCounter{RecordType: "pages.views@2026-11-23", RecordID: slotted.Key(fmt.Sprint(pages[1].ID)), Slot: int32(slot), Count: math.MaxInt64 - 1}).Error)
		}
		hold, started, release := held(1)
		installGate(t, db, func(n int32, tx *gorm.DB) { hold(n, tx) })
		first := queue([]func() error{func() error { p := Page{ID: pages[0].ID}; return slotted.Increment(db, &p, "views") }})
		<-started
		writes := make([]func() error, 49)
		for i := range writes {
			writes[i] = func() error { p := Page{ID: pages[0].ID}; return slotted.Increment(db, &p, "views") }
		}
		writes[20] = func() error { p := Page{ID: pages[1].ID}; return slotted.Add(db, &p, "views", 5) }
		rest := queue(writes)
		waitQueued(t, db, 49)
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			if i == 20 {
				require.ErrorIs(t, err, slotted.ErrOverflow)
				continue
			}
			require.NoError(t, err, "write %d", i)
		}
		requireCounts(t, db, "views", pages[0].ID, 49)
		assert.EqualValues(t, 0, rowSum(t, db, "pages.views", pages[1].ID), "the overflowing write's total row was not written")
		var full int64
		require.NoError(t, slotted.Table(db).Where("record_type = ? AND count = ?", "pages.views@2026-11-23", int64(math.MaxInt64-1)).Count(&full).Error)
		assert.EqualValues(t, 8, full, "nor its bucket rows")
	}, slotted.Config{MaxInFlight: 1, Now: func() time.Time { return writePathDay }})
}

// TestWritePathFailedBatch: a batch of bucketed and bulk writes that fails
// fails every caller in it and writes nothing for any of them.
func TestWritePathFailedBatch(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.AutoMigrate(&Page{}))
		pages := []Page{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&pages).Error)
		hold, started, release := held(1)
		installGate(t, db, func(n int32, tx *gorm.DB) {
			hold(n, tx)
			if n == 2 {
				tx.AddError(errInjected)
			}
		})
		first := queue([]func() error{func() error { p := Page{ID: pages[0].ID}; return slotted.Increment(db, &p, "views") }})
		<-started
		writes := make([]func() error, 48)
		for i := range writes {
			switch i % 3 {
			case 0:
				writes[i] = func() error { p := Page{ID: pages[0].ID}; return slotted.Increment(db, &p, "views") }
			case 1:
				writes[i] = func() error {
					return slotted.AddMany(db, []Page{{ID: pages[0].ID}, {ID: pages[1].ID}}, "views", 1)
				}
			default:
				writes[i] = func() error {
					p := Page{ID: pages[1].ID}
					return slotted.AddEach(db, &p, map[string]int64{"views": 1, "likes": 1})
				}
			}
		}
		rest := queue(writes)
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			require.ErrorIs(t, err, errInjected, "write %d", i)
		}
		requireCounts(t, db, "views", pages[0].ID, 1)
		requireCounts(t, db, "views", pages[1].ID, 0)
		requireCounts(t, db, "likes", pages[1].ID, 0)
	}, slotted.Config{MaxInFlight: 1, Now: func() time.Time { return writePathDay }})
}

// TestWritePathContextsEnding: 48 bucketed writers whose contexts end at
// random points, some while queued, some while their batch is in flight. A
// write that returned nil landed; one that returned its context error may
// have; either way both its rows landed or neither did.
func TestWritePathContextsEnding(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.AutoMigrate(&Page{}))
		page := Page{Title: "hot"}
		require.NoError(t, db.Create(&page).Error)
		const writers, each = 48, 20
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ok, gone int64
		)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration((i*each+j)%7)*time.Millisecond)
					p := Page{ID: page.ID}
					err := slotted.Increment(db.WithContext(ctx), &p, "views")
					cancel()
					mu.Lock()
					if err == nil {
						ok++
					} else if ctx.Err() != nil {
						gone++
					} else if !(dialect(db) == "sqlite" && slotted.ConflictOf(err) != slotted.NoConflict) {
						mu.Unlock()
						t.Errorf("write: %v", err)
						return
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		time.Sleep(200 * time.Millisecond) // statements still in flight for callers that left
		total := rowSum(t, db, "pages.views", page.ID)
		assert.GreaterOrEqual(t, total, ok)
		assert.LessOrEqual(t, total, ok+gone)
		assert.Equal(t, total, rowSum(t, db, "pages.views@2026-11-23", page.ID), "each write's two rows land together")
	}, slotted.Config{Now: func() time.Time { return writePathDay }})
}
