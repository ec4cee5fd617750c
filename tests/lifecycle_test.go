package tests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

func TestRollUp(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		articles := make([]Article, 12)
		for i := range articles {
			articles[i].Title = fmt.Sprintf("a%d", i)
		}
		require.NoError(t, db.Create(&articles).Error)
		for i := range articles {
			require.NoError(t, slotted.Add(db, &articles[i], "likes", int64(10*i)))
			require.NoError(t, slotted.Add(db, &articles[i], "shares", int64(i)))
		}

		// One record, then a slice, then named counters only.
		require.NoError(t, slotted.RollUp(db, &articles[3]))
		assert.EqualValues(t, 30, articles[3].LikesCount)
		var top Article
		require.NoError(t, slotted.WithoutFill(db).Order("likes_count DESC").First(&top).Error)
		assert.Equal(t, articles[3].ID, top.ID, "plain gorm queries sort by the cached column")

		require.NoError(t, slotted.RollUp(db, articles[:6], "likes"))
		var got []Article
		require.NoError(t, db.Order("id").Find(&got).Error)
		assert.EqualValues(t, 50, got[5].LikesCount)
		assert.Zero(t, got[5].SharesCount, "only the named counter was rolled up")
		assert.Zero(t, got[6].LikesCount, "records outside the slice untouched")

		// Every record, in batches, with progress; stale values are overwritten, including to 0.
		require.NoError(t, db.Model(&Article{}).Where("id = ?", articles[0].ID).Update("likes_count", 999).Error)
		var batches []slotted.RollUpProgress
		prog, err := slotted.RollUpAll(db, &Article{}, slotted.RollUpOptions{BatchSize: 5,
			Progress: func(p slotted.RollUpProgress) { batches = append(batches, p) }})
		require.NoError(t, err)
		assert.Equal(t, 12, prog.Records)
		assert.Len(t, batches, 3)
		require.NoError(t, db.Order("id").Find(&got).Error)
		for i, a := range got {
			assert.EqualValues(t, 10*i, a.LikesCount, a.Title)
			assert.EqualValues(t, i, a.SharesCount, a.Title)
		}

		// Resume after a given key.
		prog, err = slotted.RollUpAll(db, &Article{}, slotted.RollUpOptions{After: articles[9].ID})
		require.NoError(t, err)
		assert.Equal(t, 2, prog.Records)

		require.ErrorIs(t, slotted.RollUp(db, &Post{ID: 1}), slotted.ErrInvalidConfig, "Post has no cache columns")
		require.ErrorIs(t, slotted.RollUp(db, &articles, "nope"), slotted.ErrUnknownCounter)
		_, err = slotted.RollUpAll(db, &Post{})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
	})
}

func TestRunner(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		a := Article{Title: "runner"}
		require.NoError(t, db.Create(&a).Error)
		for i := 0; i < 50; i++ {
			require.NoError(t, slotted.Increment(db, &a, "likes"))
		}
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var passes []slotted.Pass
		var errs []error
		done := make(chan error)
		go func() {
			done <- slotted.Runner{
				Interval: 50 * time.Millisecond,
				Compact:  &slotted.CompactOptions{},
				RollUp:   []any{&Article{}, &Post{}}, // Post has no cache column: an error every pass
				OnError:  func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
				OnPass:   func(p slotted.Pass) { mu.Lock(); passes = append(passes, p); mu.Unlock() },
			}.Run(ctx, db)
		}()
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(passes) >= 3 }, 10*time.Second, 10*time.Millisecond)
		cancel()
		require.NoError(t, <-done, "stops cleanly when its context ends")

		mu.Lock()
		defer mu.Unlock()
		assert.GreaterOrEqual(t, len(errs), 3, "errors are reported and the runner keeps going")
		assert.ErrorIs(t, errs[0], slotted.ErrInvalidConfig)
		assert.Positive(t, passes[0].Compact.RowsRemoved)
		var got Article
		require.NoError(t, db.First(&got, a.ID).Error)
		assert.EqualValues(t, 50, got.LikesCount)
		assert.EqualValues(t, 50, got.Likes)
		ref, _ := slotted.RefOf(db, &a, "likes")
		assert.EqualValues(t, 1, slotRows(t, db, ref))

		assert.ErrorIs(t, slotted.Runner{}.Run(context.Background(), db), slotted.ErrInvalidConfig)
	})
}

func TestDeleteRemovesCounters(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := seedPosts(t, db, 6)
		keep, _ := slotted.RefOf(db, &posts[5], "likes")

		// Rolled back: the post and its counters stay.
		err := db.Transaction(func(tx *gorm.DB) error {
			require.NoError(t, tx.Delete(&posts[0]).Error)
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		n, err := slotted.Count(db, &posts[0], "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)

		// Committed, by model.
		require.NoError(t, db.Delete(&posts[0]).Error)
		for _, c := range []string{"likes", "views"} {
			ref, _ := slotted.RefOf(db, &posts[0], c)
			assert.Zero(t, slotRows(t, db, ref), c)
		}
		// By conditions, and by primary keys.
		require.NoError(t, db.Where("title IN ?", []string{"post 2", "post 3"}).Delete(&Post{}).Error)
		require.NoError(t, db.Delete(&Post{}, []uint{posts[3].ID}).Error)
		for _, p := range posts[1:4] {
			ref, _ := slotted.RefOf(db, &p, "likes")
			assert.Zero(t, slotRows(t, db, ref), p.Title)
		}
		// Inside the caller's transaction, committed.
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error { return tx.Delete(&posts[4]).Error }))
		ref, _ := slotted.RefOf(db, &posts[4], "views")
		assert.Zero(t, slotRows(t, db, ref))
		assert.Positive(t, slotRows(t, db, keep), "other posts keep theirs")

		// Soft delete keeps the counters; Unscoped deletes them.
		a := Article{Title: "soft"}
		require.NoError(t, db.Create(&a).Error)
		require.NoError(t, slotted.Add(db, &a, "likes", 3))
		aref, _ := slotted.RefOf(db, &a, "likes")
		require.NoError(t, db.Delete(&a).Error)
		assert.EqualValues(t, 1, slotRows(t, db, aref))
		require.NoError(t, db.Unscoped().Delete(&a).Error)
		assert.Zero(t, slotRows(t, db, aref))
	})
}

func TestSweep(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := seedPosts(t, db, 7)
		// Deleted behind gorm's back: the counters are orphans.
		require.NoError(t, db.Exec("DELETE FROM posts WHERE id IN ?", []uint{posts[1].ID, posts[4].ID}).Error)
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "posts.likes", ID: "not-a-number"}, 1))
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "other", ID: "1"}, 1))
		before := counterRows(t, db)

		prog, err := slotted.Sweep(db, &Post{}, slotted.SweepOptions{BatchSize: 2})
		require.NoError(t, err)
		assert.Equal(t, 3, prog.Orphans)
		assert.Equal(t, 8, prog.Checked)
		assert.Equal(t, before-prog.Rows, counterRows(t, db))
		for i, p := range posts {
			n, err := slotted.Count(db, &p, "likes")
			require.NoError(t, err)
			if i == 1 || i == 4 {
				assert.Zero(t, n, p.Title)
			} else {
				assert.EqualValues(t, i+1, n, p.Title)
			}
		}
		n, err := slotted.CountRef(db, slotted.Ref{Type: "other", ID: "1"})
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "record types of other models are not swept")

		prog, err = slotted.Sweep(db, &Post{})
		require.NoError(t, err)
		assert.Zero(t, prog.Orphans)

		// String and UUID keys.
		docs := []Doc{{ID: uuidFor(1)}, {ID: uuidFor(2)}}
		require.NoError(t, db.Create(&docs[0]).Error)
		for i := range docs {
			require.NoError(t, slotted.Increment(db, &docs[i], "reads"))
		}
		prog, err = slotted.Sweep(db, &Doc{})
		require.NoError(t, err)
		assert.Equal(t, 1, prog.Orphans)
		_, err = slotted.Sweep(db, &Post{}, slotted.SweepOptions{BatchSize: -1})
		require.True(t, errors.Is(err, slotted.ErrInvalidConfig))
	})
}
