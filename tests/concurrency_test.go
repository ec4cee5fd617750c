package tests

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

const (
	writers   = 48
	perWriter = 40
)

// run starts n goroutines and waits; the first error of each is collected.
func run(n int, fn func(worker int) error) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = fn(w)
		}()
	}
	wg.Wait()
	return errs
}

func TestConcurrentHotRecord(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "hot"}
		require.NoError(t, db.Create(&post).Error)
		errs := run(writers, func(w int) error {
			mine := Post{ID: post.ID} // each writer has its own copy, as each request would
			for i := 0; i < perWriter; i++ {
				delta := int64(1)
				if i%10 == 9 {
					delta = -1
				}
				if err := slotted.Add(db, &mine, "likes", delta); err != nil {
					return err
				}
				if err := slotted.Increment(db, &mine, "views"); err != nil { // 4 slots: heavy row contention
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		want := int64(writers * (perWriter - 2*perWriter/10))
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.Equal(t, want, n)
		n, err = slotted.Count(db, &post, "views")
		require.NoError(t, err)
		assert.EqualValues(t, writers*perWriter, n)

		var rows int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.views").Count(&rows).Error)
		assert.LessOrEqual(t, rows, int64(4))
	})
}

// TestConcurrentFreshRecords races the first insert of each slot row: every
// writer hits the same brand-new records, whose single slot row does not exist yet.
func TestConcurrentFreshRecords(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		const records = 20
		errs := run(writers, func(w int) error {
			order := rand.Perm(records)
			for _, r := range order {
				tag := Tag{Name: fmt.Sprintf("fresh-%02d", r)} // uses has slots:1: every writer hits one row
				if err := slotted.Increment(db, &tag, "uses"); err != nil {
					return err
				}
				if err := slotted.AddRef(db, slotted.Ref{Type: "fresh", ID: tag.Name}, 2); err != nil {
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		tags := make([]Tag, records)
		for r := range tags {
			tags[r].Name = fmt.Sprintf("fresh-%02d", r)
		}
		require.NoError(t, slotted.Load(db, tags))
		for _, tag := range tags {
			assert.Equal(t, writers, tag.Uses, tag.Name)
			n, err := slotted.CountRef(db, slotted.Ref{Type: "fresh", ID: tag.Name})
			require.NoError(t, err)
			assert.EqualValues(t, 2*writers, n, tag.Name)
		}
		var rows int64
		require.NoError(t, slotted.Table(db).Where("record_type = ?", "tags.uses").Count(&rows).Error)
		assert.EqualValues(t, records, rows, "one row per record: racing first inserts merged")
	})
}

// TestConcurrentTransactions: writers inside their own transactions, some rolled back.
func TestConcurrentTransactions(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "tx-hot"}
		require.NoError(t, db.Create(&post).Error)
		var mu sync.Mutex
		committed := 0
		errs := run(writers, func(w int) error {
			for i := 0; i < 5; i++ {
				err := db.Transaction(func(tx *gorm.DB) error {
					mine := Post{ID: post.ID}
					if err := slotted.Increment(tx, &mine, "likes"); err != nil {
						return err
					}
					if (w+i)%3 == 0 {
						return errRollback
					}
					return nil
				})
				switch {
				case err == nil:
					mu.Lock()
					committed++
					mu.Unlock()
				case err == errRollback:
				case retryable(err):
					// A transaction's deadlock or busy error is the caller's to retry; the count must stay exact.
				default:
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, committed, n)
		assert.Positive(t, committed)
	})
}
