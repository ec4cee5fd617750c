package tests

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotted-go/slotted"
)

// BenchmarkPrecreatedSlotsPaired measures issue 16's item 4, pre-created
// slots, against the upsert, per write (no coalescing: the statements of
// 64 writers race for the same rows), 64 writers on one counter that is new
// each window, sides alternating:
//   - upsert:  INSERT … ON DUPLICATE KEY UPDATE / ON CONFLICT DO UPDATE into a random slot of 100,
//     so the window starts by creating the slot rows (the insert path and its locks on new rows);
//   - update:  the counter's 100 slot rows inserted before the window (not timed), then only
//     UPDATE … SET count = count + 1 WHERE record_type = ? AND record_id = ? AND slot = ?.
//
// Lock conflicts are errors here (not retried): counted per 10k writes. Ignores b.N.
//
//	go test -run '^$' -bench 'PrecreatedSlotsPaired' -benchtime 1x ./tests
func BenchmarkPrecreatedSlotsPaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 6)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	const slots = slotted.DefaultSlots
	for _, name := range dbNames(b) {
		if name == dbSQLite {
			continue // one writer at a time: nothing to compare
		}
		b.Run(name, func(b *testing.B) {
			_, sqlDB, _ := benchDB(b, name)
			upsert, err := sqlDB.Prepare(rawUpsert(name))
			if err != nil {
				b.Fatal(err)
			}
			defer upsert.Close()
			q := "UPDATE bench_counters SET count = count + ? WHERE record_type = ? AND record_id = ? AND slot = ?"
			if name == dbPostgres {
				q = "UPDATE bench_counters SET count = count + $1 WHERE record_type = $2 AND record_id = $3 AND slot = $4"
			}
			update, err := sqlDB.Prepare(q)
			if err != nil {
				b.Fatal(err)
			}
			defer update.Close()
			var conflicts, writes [2]atomic.Int64
			var id atomic.Int64
			side := func(k int, rid string) func() error {
				return func() error {
					var err error
					if k == 0 {
						_, err = upsert.Exec("bench_pre", rid, rand.IntN(slots), 1)
					} else {
						_, err = update.Exec(1, "bench_pre", rid, rand.IntN(slots))
					}
					writes[k].Add(1)
					if err != nil && slotted.ConflictOf(err) != slotted.NoConflict {
						conflicts[k].Add(1)
						return nil
					}
					return err
				}
			}
			var rates [2][]float64
			var ratios []float64
			for r := 0; r < rounds; r++ {
				var got [2]float64
				for i := range 2 {
					k := (i + r) % 2
					rid := fmt.Sprint(id.Add(1))
					if k == 1 {
						for s := range slots {
							if _, err := upsert.Exec("bench_pre", rid, s, 0); err != nil {
								b.Fatal(err)
							}
						}
					}
					got[k] = opsPerSec(b, window, side(k, rid))
					rates[k] = append(rates[k], got[k])
				}
				ratios = append(ratios, got[1]/got[0])
			}
			b.ReportMetric(median(rates[0]), "upsert-ops/s")
			b.ReportMetric(median(rates[1]), "update-ops/s")
			b.ReportMetric(median(ratios), "update/upsert")
			b.ReportMetric(slices.Min(ratios), "min-ratio")
			b.ReportMetric(slices.Max(ratios), "max-ratio")
			for k, n := range []string{"upsert", "update"} {
				b.ReportMetric(float64(conflicts[k].Load())*10000/float64(max(writes[k].Load(), 1)), n+"-conflicts/10k")
			}
		})
	}
}
