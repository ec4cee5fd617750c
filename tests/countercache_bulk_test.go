package tests

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// bulkMoves runs writers goroutines each making moves bulk moves of the
// replies of a few hot topics (UPDATE replies SET topic_id = ? WHERE topic_id
// = ? AND points < ?), each in gorm's default transaction. A move that fails on
// a lock conflict is counted and retried (the whole transaction rolled back).
func bulkMoves(t testing.TB, db *gorm.DB, topics []uint, writers, moves int) (attempts, conflicts int64) {
	var a, c atomic.Int64
	errs := run(writers, func(w int) error {
		r := rand.New(rand.NewPCG(uint64(w), 18))
		for i := 0; i < moves; i++ {
			from, to, below := topics[r.IntN(len(topics))], topics[r.IntN(len(topics))], 1+r.IntN(2*popularPoints)
			err := retryConflicts(func() error {
				a.Add(1)
				err := db.Model(&Reply{}).Where("topic_id = ? AND points < ?", from, below).Update("topic_id", to).Error
				if retryable(err) {
					c.Add(1)
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("writer %d move %d: %w", w, i, err)
			}
		}
		return nil
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	return a.Load(), c.Load()
}

// seedBulkReplies creates topics with 40 replies each, points 0..19.
func seedBulkReplies(t testing.TB, db *gorm.DB, n int) []uint {
	ids := newTopics(t, db, n)
	var replies []Reply
	for i := range 40 * n {
		replies = append(replies, Reply{TopicID: ptr(ids[i%n]), Points: int64(i % (2 * popularPoints)), Published: i%3 == 0})
	}
	require.NoError(t, db.CreateInBatches(&replies, 100).Error)
	return ids
}

// TestCounterCacheBulkMovesConcurrent: 32 goroutines move replies between four
// hot topics with bulk UPDATEs; every counter equals the replies table
// afterwards. On MySQL/MariaDB the rows are locked by primary key in key order
// (countercache_locks.go); the conflict rate is logged
// (BenchmarkCounterCacheBulkMoves reports it).
func TestCounterCacheBulkMovesConcurrent(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		declareExtraCaches(t, db)
		limitConns(t, db)
		ids := seedBulkReplies(t, db, 4)
		attempts, conflicts := bulkMoves(t, db, ids, 32, 8)
		t.Logf("%d of %d bulk moves hit a lock conflict (retried)", conflicts, attempts)
		requireTopicsExact(t, db, ids...)
	})
}

// BenchmarkCounterCacheBulkMoves measures the share of bulk counter-cache
// moves that fail on a lock conflict (deadlock, lock wait timeout, SQLite
// busy) at 32 writers on four hot topics, 20 moves each. It ignores b.N.
func BenchmarkCounterCacheBulkMoves(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db := openRaw(b, name)
			require.NoError(b, db.Migrator().DropTable(slotted.DefaultTable))
			require.NoError(b, db.Use(slotted.New(slotted.Config{})))
			cacheDB(b, db)
			limitConns(b, db)
			ids := seedBulkReplies(b, db, 4)
			attempts, conflicts := bulkMoves(b, db, ids, 32, 20)
			b.ReportMetric(float64(conflicts)/float64(attempts), "conflicts/attempt")
			b.ReportMetric(float64(attempts-conflicts), "moves")
			requireTopicsExact(b, db, ids...)
		})
	}
}
