package tests

import (
	"fmt"
	"log"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// BenchRailsPost and BenchRailsLike are the Rails/Laravel like: a likes row
// (one per user) and a counter column on the post, updated in one transaction.
type BenchRailsPost struct {
	ID         uint `gorm:"primaryKey"`
	LikesCount int64
}

type BenchRailsLike struct {
	ID     uint   `gorm:"primaryKey"`
	PostID uint   `gorm:"uniqueIndex:idx_bench_rails_like,priority:1"`
	User   string `gorm:"size:64;uniqueIndex:idx_bench_rails_like,priority:2"`
}

// BenchmarkWritePathPaired measures issue 16's targets in one run, 64
// writers on one hot record, sides in alternating windows (rotated every
// round), ratios as medians of per-round ratios:
//   - plain:    Increment of a counter without buckets (coalesced);
//   - bucketed: Increment of a buckets:day counter (its total and bucket rows, coalesced);
//   - once:     AddOnce with a fresh key per call (coalesced: one key INSERT … RETURNING per batch);
//   - rails:    INSERT a likes row + UPDATE posts SET likes_count = likes_count + 1, one transaction;
//   - bucketed-perop: the bucketed Increment with DisableCoalescing (a two-row statement per write);
//   - plain-perop: the plain Increment with DisableCoalescing (one upsert per write).
//
// It reports lock conflicts (deadlocks, lock wait timeouts; all retried) per 10k writes of the
// two bucketed sides. Ignores b.N: SLOTTED_BENCH_ROUNDS rounds (default 6) of SLOTTED_BENCH_WINDOW_MS
// (default 1000) per side.
//
//	go test -run '^$' -bench 'WritePathPaired' -benchtime 1x ./tests
func BenchmarkWritePathPaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 6)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db := benchWritePathDB(b, name)
			// The per-op path on the same tables: each bucketed write its own two-row statement (as before
			// issue 16), for its lock conflicts.
			perop := openRaw(b, name)
			perop.Config.Logger = db.Config.Logger
			if sqlDB, err := perop.DB(); err == nil {
				conns := envInt("SLOTTED_BENCH_CONNS", benchWriters)
				sqlDB.SetMaxOpenConns(conns)
				sqlDB.SetMaxIdleConns(conns)
			}
			if err := perop.Use(slotted.New(slotted.Config{Table: benchTable, OnceTable: benchOnceTable, DisableCoalescing: true, DisableAutoMigrate: true, Now: func() time.Time { return benchNow }})); err != nil {
				b.Fatal(err)
			}
			v := BenchVideo{Title: "hot"}
			rp := BenchRailsPost{}
			if err := db.Create(&v).Error; err != nil {
				b.Fatal(err)
			}
			if err := db.Create(&rp).Error; err != nil {
				b.Fatal(err)
			}
			run := time.Now().UnixNano()
			var seq atomic.Int64
			var bucketedWrites, peropWrites atomic.Int64
			sides := []func() error{
				func() error { return slotted.Increment(db, &BenchVideo{ID: v.ID}, "likes") },
				func() error {
					bucketedWrites.Add(1)
					return slotted.Increment(db, &BenchVideo{ID: v.ID}, "views")
				},
				func() error {
					applied, err := slotted.AddOnce(db, &BenchVideo{ID: v.ID}, "likes", 1, fmt.Sprintf("u:%d:%d", run, seq.Add(1)))
					if err == nil && !applied {
						err = fmt.Errorf("a fresh key was not applied")
					}
					return err
				},
				func() error {
					return db.Transaction(func(tx *gorm.DB) error {
						if err := tx.Create(&BenchRailsLike{PostID: rp.ID, User: fmt.Sprintf("u:%d", seq.Add(1))}).Error; err != nil {
							return err
						}
						return tx.Model(&BenchRailsPost{ID: rp.ID}).UpdateColumn("likes_count", gorm.Expr("likes_count + ?", 1)).Error
					})
				},
				func() error {
					peropWrites.Add(1)
					return slotted.Increment(perop, &BenchVideo{ID: v.ID}, "views")
				},
				func() error { return slotted.Increment(perop, &BenchVideo{ID: v.ID}, "likes") },
			}
			names := []string{"plain", "bucketed", "once", "rails", "bucketed-perop", "plain-perop"}
			rates := make([][]float64, len(sides))
			var bucketed, once, coalesced []float64
			var conflicts, peropConflicts uint64
			for r := 0; r < rounds; r++ {
				got := make([]float64, len(sides))
				for i := range sides {
					k := (i + r) % len(sides)
					before, _ := slotted.StatsOf(db)
					pbefore, _ := slotted.StatsOf(perop)
					got[k] = opsPerSec(b, window, sides[k])
					after, _ := slotted.StatsOf(db)
					pafter, _ := slotted.StatsOf(perop)
					switch k {
					case 1:
						for c, n := range after.Conflicts {
							conflicts += n - before.Conflicts[c]
						}
					case 4:
						for c, n := range pafter.Conflicts {
							peropConflicts += n - pbefore.Conflicts[c]
						}
					}
					rates[k] = append(rates[k], got[k])
				}
				bucketed, once = append(bucketed, got[1]/got[0]), append(once, got[2]/got[3])
				coalesced = append(coalesced, got[0]/got[5])
			}
			for i, n := range names {
				b.ReportMetric(median(rates[i]), n+"-ops/s")
			}
			b.ReportMetric(median(bucketed), "bucketed/plain")
			b.ReportMetric(slices.Min(bucketed), "min-bucketed/plain")
			b.ReportMetric(median(once), "once/rails")
			b.ReportMetric(median(coalesced), "plain/plain-perop")
			b.ReportMetric(slices.Min(once), "min-once/rails")
			b.ReportMetric(float64(conflicts)*10000/float64(max(bucketedWrites.Load(), 1)), "bucketed-conflicts/10k")
			b.ReportMetric(float64(peropConflicts)*10000/float64(max(peropWrites.Load(), 1)), "perop-conflicts/10k")
		})
	}
}

func benchWritePathDB(b *testing.B, name string) *gorm.DB {
	b.Helper()
	db := openRaw(b, name)
	db.Config.Logger = logger.New(log.New(benchLog(b), "\r\n", log.LstdFlags), logger.Config{
		SlowThreshold: 200 * time.Millisecond, LogLevel: logger.Warn, Colorful: true,
	})
	sqlDB, err := db.DB()
	if err != nil {
		b.Fatal(err)
	}
	conns := envInt("SLOTTED_BENCH_CONNS", benchWriters)
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	if err := db.Migrator().DropTable(&BenchVideo{}, &BenchRailsLike{}, &BenchRailsPost{}, benchTable, benchOnceTable); err != nil {
		b.Fatal(err)
	}
	if err := db.Use(slotted.New(slotted.Config{Table: benchTable, OnceTable: benchOnceTable, Now: func() time.Time { return benchNow }})); err != nil {
		b.Fatal(err)
	}
	if err := db.AutoMigrate(&BenchVideo{}, &BenchRailsPost{}, &BenchRailsLike{}); err != nil {
		b.Fatal(err)
	}
	return db
}
