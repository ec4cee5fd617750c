package tests

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Counter-cache benchmark models: one hot topic, three kinds of replies in
// three tables, so that each variant inserts into a table of its own.
type BenchTopic struct {
	ID          uint
	Replies     []BenchReply
	Replies1000 []BenchReply1000
	Count       int64 `gorm:"-" slotted:"replies"`                 // the slotted counter cache (BenchReply), Config.Slots (100)
	Count1000   int64 `gorm:"-" slotted:"replies_1000;slots:1000"` // the same with 1000 slots (BenchReply1000)
	// RepliesCount is the Rails-style single-column cache (BenchRailsReply).
	RepliesCount int64 `gorm:"not null;default:0"`
}

// BenchReply is counted by the slotted counter cache.
type BenchReply struct {
	ID           uint
	BenchTopicID uint `gorm:"index"`
	Body         string
}

// BenchReply1000 is counted by the 1000-slot counter cache.
type BenchReply1000 struct {
	ID           uint
	BenchTopicID uint `gorm:"index"`
	Body         string
}

// BenchPlainReply has no counter at all: the floor.
type BenchPlainReply struct {
	ID           uint
	BenchTopicID uint `gorm:"index"`
	Body         string
}

// BenchRailsReply keeps bench_topics.replies_count the way Rails'
// counter_cache does: UPDATE parent SET n = n + 1 in the child's transaction.
type BenchRailsReply struct {
	ID           uint
	BenchTopicID uint `gorm:"index"`
	Body         string
}

func (r *BenchRailsReply) AfterCreate(tx *gorm.DB) error {
	return tx.Model(&BenchTopic{}).Where("id = ?", r.BenchTopicID).
		UpdateColumn("replies_count", gorm.Expr("replies_count + ?", 1)).Error
}

// BenchmarkCounterCachePaired measures db.Create of one reply of one hot
// topic, in gorm's default transaction, four ways: with the slotted counter
// cache (100 slots, and 1000), with the Rails-style single-column cache, and
// with no counter. The
// variants alternate in short windows (the order rotating every round), at 1
// and 64 writers, and the medians of the per-round ratios are reported. It
// ignores b.N: SLOTTED_BENCH_ROUNDS rounds (default 6) of
// SLOTTED_BENCH_WINDOW_MS (default 1000) per variant and writer count.
//
// The child tables have no foreign key constraint: with one, InnoDB's
// Rails-style variant takes a shared lock on the parent row at the INSERT and
// then needs an exclusive one for its UPDATE, which deadlocks under
// concurrency; without it the single-column cache is at its best.
func BenchmarkCounterCachePaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 6)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, _, _ := benchDB(b, name)
			models := []any{&BenchReply{}, &BenchReply1000{}, &BenchPlainReply{}, &BenchRailsReply{}, &BenchTopic{}}
			if err := db.Migrator().DropTable(models...); err != nil {
				b.Fatal(err)
			}
			noFK := db.Session(&gorm.Session{})
			noFK.Config.DisableForeignKeyConstraintWhenMigrating = true
			if err := noFK.AutoMigrate(models...); err != nil {
				b.Fatal(err)
			}
			if err := slotted.CounterCache(db, &BenchTopic{}, "Replies", "replies"); err != nil {
				b.Fatal(err)
			}
			if err := slotted.CounterCache(db, &BenchTopic{}, "Replies1000", "replies_1000"); err != nil {
				b.Fatal(err)
			}
			topic := BenchTopic{}
			if err := db.Create(&topic).Error; err != nil {
				b.Fatal(err)
			}
			var retries atomic.Int64
			create := func(row func() any) func() error {
				return func() error {
					for {
						err := db.Create(row()).Error
						if err == nil || !retryable(err) {
							return err
						}
						retries.Add(1) // a deadlock rolled the whole Create back
					}
				}
			}
			variants := []struct {
				name string
				fn   func() error
			}{
				{"slotted", create(func() any { return &BenchReply{BenchTopicID: topic.ID} })},
				{"rails", create(func() any { return &BenchRailsReply{BenchTopicID: topic.ID} })},
				{"none", create(func() any { return &BenchPlainReply{BenchTopicID: topic.ID} })},
				{"slotted1000", create(func() any { return &BenchReply1000{BenchTopicID: topic.ID} })},
			}
			for _, workers := range []int{1, benchWriters} {
				rates := make([][]float64, len(variants))
				var vsRails, vsNone, vsRails1000 []float64
				for r := 0; r < rounds; r++ {
					got := make([]float64, len(variants))
					for i := range variants {
						v := (i + r) % len(variants)
						got[v] = opsPerSecN(b, window, workers, variants[v].fn)
						rates[v] = append(rates[v], got[v])
					}
					vsRails, vsNone = append(vsRails, got[0]/got[1]), append(vsNone, got[0]/got[2])
					vsRails1000 = append(vsRails1000, got[3]/got[1])
				}
				for i, v := range variants {
					b.ReportMetric(median(rates[i]), fmt.Sprintf("%s-w%d-ops/s", v.name, workers))
				}
				b.ReportMetric(median(vsRails), fmt.Sprintf("slotted/rails-w%d", workers))
				b.ReportMetric(slices.Min(vsRails), fmt.Sprintf("slotted/rails-w%d-min", workers))
				b.ReportMetric(median(vsNone), fmt.Sprintf("slotted/none-w%d", workers))
				b.ReportMetric(median(vsRails1000), fmt.Sprintf("slotted1000/rails-w%d", workers))
			}
			b.ReportMetric(float64(retries.Load()), "retries")

			// Both caches must be exact after all that.
			var replies, replies1000, rails int64
			db.Model(&BenchReply{}).Count(&replies)
			db.Model(&BenchReply1000{}).Count(&replies1000)
			db.Model(&BenchRailsReply{}).Count(&rails)
			var got BenchTopic
			if err := db.First(&got, topic.ID).Error; err != nil {
				b.Fatal(err)
			}
			if got.Count != replies || got.Count1000 != replies1000 || got.RepliesCount != rails {
				b.Fatalf("slotted %d vs %d replies, %d vs %d, rails %d vs %d", got.Count, replies, got.Count1000, replies1000, got.RepliesCount, rails)
			}
		})
	}
}
