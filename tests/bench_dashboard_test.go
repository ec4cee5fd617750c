package tests

import (
	"slices"
	"testing"
	"time"

	"github.com/slotted-go/slotted"
)

// BenchmarkSeriesManyPaired: a page of 20 stories' 7-day series, read by one
// SeriesMany against 20 SeriesIn calls (the loop it replaces), alternating
// 1-s windows of one reader (SLOTTED_BENCH_ROUNDS rounds, default 6), median
// of the per-round ratios. Each story has a write in each of the 7 days.
// Runs once, ignoring b.N.
func BenchmarkSeriesManyPaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 6)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			clock := newClock(time.Date(2026, 11, 19, 12, 0, 0, 0, time.UTC))
			db := openRaw(b, name)
			if err := db.Migrator().DropTable(slotted.DefaultTable); err != nil {
				b.Fatal(err)
			}
			if err := db.Use(slotted.New(slotted.Config{Now: clock.Now})); err != nil {
				b.Fatal(err)
			}
			stories := migrateStories(b, db)
			for day := range 7 {
				for i := range stories {
					if err := slotted.Add(db, &Story{ID: stories[i].ID}, "views", int64(i+day)); err != nil {
						b.Fatal(err)
					}
				}
				clock.Set(clock.Now().AddDate(0, 0, 1))
			}
			clock.Set(clock.Now().AddDate(0, 0, -1))
			w := slotted.LastDays(7)
			many := func() error { _, err := slotted.SeriesMany(db, &stories, "views", w); return err }
			loop := func() error {
				for i := range stories {
					if _, err := slotted.SeriesIn(db, &stories[i], "views", w); err != nil {
						return err
					}
				}
				return nil
			}
			var ratios, manyRates, loopRates []float64
			for r := 0; r < rounds; r++ {
				var mr, lr float64
				if r%2 == 0 {
					mr, lr = opsPerSecN(b, window, 1, many), opsPerSecN(b, window, 1, loop)
				} else {
					lr, mr = opsPerSecN(b, window, 1, loop), opsPerSecN(b, window, 1, many)
				}
				ratios, manyRates, loopRates = append(ratios, mr/lr), append(manyRates, mr), append(loopRates, lr)
			}
			b.ReportMetric(median(manyRates), "many-pages/s")
			b.ReportMetric(median(loopRates), "loop-pages/s")
			b.ReportMetric(median(ratios), "many/loop")
			b.ReportMetric(slices.Min(ratios), "min-ratio")
			b.ReportMetric(slices.Max(ratios), "max-ratio")
		})
	}
}
