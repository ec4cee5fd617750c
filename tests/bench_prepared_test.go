package tests

import (
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// BenchmarkPreparedPaired measures what Config.DisablePrepared costs: the
// plugin's statements unprepared (as behind a transaction-mode pooler) against
// its prepared statements (the default), two pools on the same table, in
// alternating windows (which goes first swaps every round), on one hot record:
// one upsert per Increment (DisableCoalescing) with 1 and 64 writers, and the
// default coalesced path with 64 writers. It reports the median of the
// per-round ratios. It ignores b.N: SLOTTED_BENCH_ROUNDS rounds (default 6) of
// SLOTTED_BENCH_WINDOW_MS (default 1000) per side. PostgreSQL pools hold at
// most 8 connections (max_connections is shared on the test machine).
//
//	go test -run '^$' -bench BenchmarkPreparedPaired -benchtime 1x ./tests
func BenchmarkPreparedPaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 6)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			_, _, post := benchDB(b, name) // the table and the hot record
			pool := func(cfg slotted.Config) *gorm.DB {
				db := openRaw(b, name)
				cfg.Table = benchTable
				if err := db.Use(slotted.New(cfg)); err != nil {
					b.Fatal(err)
				}
				sqlDB, err := db.DB()
				if err != nil {
					b.Fatal(err)
				}
				conns := benchWriters
				if name == dbPostgres {
					conns = 8
				}
				sqlDB.SetMaxOpenConns(conns)
				sqlDB.SetMaxIdleConns(conns)
				return db
			}
			for _, c := range []struct {
				name     string
				writers  int
				coalesce bool
			}{{"per-op/writers=1", 1, false}, {"per-op/writers=64", 64, false}, {"coalesced/writers=64", 64, true}} {
				b.Run(c.name, func(b *testing.B) {
					prepared := pool(slotted.Config{DisableCoalescing: !c.coalesce})
					unprepared := pool(slotted.Config{DisableCoalescing: !c.coalesce, DisablePrepared: true})
					inc := func(db *gorm.DB) func() error {
						return func() error { p := BenchPost{ID: post.ID}; return slotted.Increment(db, &p, "likes") }
					}
					on, off := inc(prepared), inc(unprepared)
					var ratios, onRates, offRates []float64
					for r := range rounds {
						var pr, ur float64
						if r%2 == 0 {
							pr = opsPerSecN(b, window, c.writers, on)
							ur = opsPerSecN(b, window, c.writers, off)
						} else {
							ur = opsPerSecN(b, window, c.writers, off)
							pr = opsPerSecN(b, window, c.writers, on)
						}
						ratios, onRates, offRates = append(ratios, ur/pr), append(onRates, pr), append(offRates, ur)
					}
					for _, db := range []*gorm.DB{prepared, unprepared} {
						if sqlDB, err := db.DB(); err == nil {
							_ = sqlDB.Close()
						}
					}
					b.ReportMetric(median(onRates), "prepared-ops/s")
					b.ReportMetric(median(offRates), "unprepared-ops/s")
					b.ReportMetric(median(ratios), "unprepared/prepared")
					b.ReportMetric(slices.Min(ratios), "min-ratio")
					b.ReportMetric(slices.Max(ratios), "max-ratio")
				})
			}
		})
	}
}
