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

// benchOnceTable keeps the benchmark's keys apart from the tests'.
const benchOnceTable = "bench_once"

// BenchmarkAddOncePaired measures what retry safety costs: AddOnce (a fresh
// key per call, as for request ids, kept forever) against Increment on the
// same hot record, in alternating windows like BenchmarkIncrementPaired, at
// 1 writer and at benchWriters. once/increment is the median of the
// per-round ratios of ops/s. It ignores b.N: SLOTTED_BENCH_ROUNDS rounds
// (default 8) of SLOTTED_BENCH_WINDOW_MS (default 1000) per side.
func BenchmarkAddOncePaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 8)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, post := benchOnceDB(b, name)
			var seq atomic.Int64
			once := func() error {
				p := BenchPost{ID: post.ID}
				applied, err := slotted.AddOnce(db, &p, "likes", 1, fmt.Sprint("req:", seq.Add(1)))
				if err == nil && !applied {
					err = fmt.Errorf("a fresh key was not applied")
				}
				return err
			}
			inc := func() error { p := BenchPost{ID: post.ID}; return slotted.Increment(db, &p, "likes") }
			for _, writers := range []int{1, benchWriters} {
				b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
					var ratios, onceRates, incRates []float64
					for r := 0; r < rounds; r++ {
						var or, ir float64
						if r%2 == 0 {
							or = opsPerSecN(b, window, writers, once)
							ir = opsPerSecN(b, window, writers, inc)
						} else {
							ir = opsPerSecN(b, window, writers, inc)
							or = opsPerSecN(b, window, writers, once)
						}
						ratios, onceRates, incRates = append(ratios, or/ir), append(onceRates, or), append(incRates, ir)
					}
					b.ReportMetric(median(onceRates), "once-ops/s")
					b.ReportMetric(median(incRates), "increment-ops/s")
					b.ReportMetric(median(ratios), "once/increment")
					b.ReportMetric(slices.Min(ratios), "min-ratio")
					b.ReportMetric(slices.Max(ratios), "max-ratio")
				})
			}
		})
	}
}

// benchOnceDB is benchDB with the once table of its own.
func benchOnceDB(b *testing.B, name string) (*gorm.DB, BenchPost) {
	b.Helper()
	db := openRaw(b, name)
	db.Config.Logger = logger.New(log.New(benchLog(b), "\r\n", log.LstdFlags), logger.Config{
		SlowThreshold: 200 * time.Millisecond, LogLevel: logger.Warn, Colorful: true,
	})
	sqlDB, err := db.DB()
	if err != nil {
		b.Fatal(err)
	}
	conns := envInt("SLOTTED_BENCH_CONNS", benchWriters) // below benchWriters when a shared server is short of connections
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	if err := db.Migrator().DropTable(&BenchPost{}, benchTable, benchOnceTable); err != nil {
		b.Fatal(err)
	}
	if err := db.Use(slotted.New(slotted.Config{Table: benchTable, OnceTable: benchOnceTable})); err != nil {
		b.Fatal(err)
	}
	if err := db.AutoMigrate(&BenchPost{}); err != nil {
		b.Fatal(err)
	}
	post := BenchPost{}
	if err := db.Create(&post).Error; err != nil {
		b.Fatal(err)
	}
	return db, post
}
