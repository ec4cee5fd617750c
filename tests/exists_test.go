package tests

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// MustExist: writes to a missing (or soft-deleted) record fail with
// ErrRecordNotFound and write nothing; writes to existing records count as
// usual, also from 16 goroutines mixing both.
func TestMustExist(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "here"}
		require.NoError(t, db.Create(&post).Error)
		must := slotted.MustExist(db)
		missing := &Post{ID: post.ID + 1000}
		err := slotted.Increment(must, missing, "likes")
		require.ErrorIs(t, err, slotted.ErrRecordNotFound)
		require.True(t, errors.Is(err, gorm.ErrRecordNotFound))
		_, err = slotted.AddOnce(must, missing, "likes", 1, "user:1")
		require.ErrorIs(t, err, slotted.ErrRecordNotFound)
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			assert.ErrorIs(t, slotted.Increment(slotted.MustExist(tx), missing, "likes"), slotted.ErrRecordNotFound)
			return slotted.Increment(slotted.MustExist(tx), &Post{ID: post.ID}, "likes")
		}))
		article := Article{Title: "gone"}
		require.NoError(t, db.Create(&article).Error)
		require.NoError(t, db.Delete(&article).Error) // soft delete
		assert.ErrorIs(t, slotted.Increment(must, &Article{ID: article.ID}, "likes"), slotted.ErrRecordNotFound)
		assert.EqualValues(t, 1, counterRows(t, db), "only the transaction's write")
		var keys int64
		require.NoError(t, db.Table(slotted.DefaultOnceTable).Where("record_id = ?", fmt.Sprint(missing.ID)).Count(&keys).Error)
		assert.Zero(t, keys)

		var wg sync.WaitGroup
		var applied, refused atomic.Int64
		errs := make(chan error, 16)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					p := &Post{ID: post.ID}
					if rand.IntN(2) == 0 {
						p.ID = missing.ID
					}
					switch err := slotted.Increment(must, p, "likes"); {
					case err == nil && p.ID == post.ID:
						applied.Add(1)
					case errors.Is(err, slotted.ErrRecordNotFound) && p.ID == missing.ID:
						refused.Add(1)
					default:
						errs <- fmt.Errorf("post %d: %v", p.ID, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.Equal(t, applied.Load()+1, n)
		n, err = slotted.Count(db, missing, "likes")
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.EqualValues(t, 800, applied.Load()+refused.Load())
	})
}

func TestRequireRecordsConfig(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		assert.ErrorIs(t, slotted.Increment(db, &Post{ID: 77}, "likes"), slotted.ErrRecordNotFound)
		require.NoError(t, slotted.Increment(slotted.MustExist(db, false), &Post{ID: 77}, "likes"), "turned off per *gorm.DB")
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "x", ID: "77"}, 1), "refs are not checked")
		assert.EqualValues(t, 2, counterRows(t, db))
	}, slotted.Config{RequireRecords: true})
}

// BenchmarkMustExist is the cost of the existence check: Increment with and
// without MustExist on one existing record, 64 writers, alternating 1-s
// windows (SLOTTED_BENCH_ROUNDS rounds, default 8), median of the per-round
// ratios. Runs once, ignoring b.N.
func BenchmarkMustExist(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 8)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, _, post := benchDB(b, name)
			must := slotted.MustExist(db)
			plain := func() error { p := BenchPost{ID: post.ID}; return slotted.Increment(db, &p, "likes") }
			checked := func() error { p := BenchPost{ID: post.ID}; return slotted.Increment(must, &p, "likes") }
			var ratios, plainRates, checkedRates []float64
			for r := 0; r < rounds; r++ {
				var pr, cr float64
				if r%2 == 0 {
					pr, cr = opsPerSec(b, window, plain), opsPerSec(b, window, checked)
				} else {
					cr, pr = opsPerSec(b, window, checked), opsPerSec(b, window, plain)
				}
				ratios, plainRates, checkedRates = append(ratios, cr/pr), append(plainRates, pr), append(checkedRates, cr)
			}
			b.ReportMetric(median(plainRates), "plain-ops/s")
			b.ReportMetric(median(checkedRates), "checked-ops/s")
			b.ReportMetric(median(ratios), "checked/plain")
			b.ReportMetric(slices.Min(ratios), "min-ratio")
			b.ReportMetric(slices.Max(ratios), "max-ratio")
		})
	}
}
