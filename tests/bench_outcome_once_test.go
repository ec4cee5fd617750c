package tests

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// BenchmarkOnceMarkersPaired: the cost of the outcome marker in AddOnce
// batches without faults, paired as BenchmarkOutcomeMarkersPaired: two pools
// on one database, one with markers (the default), one with
// DisableOutcomeMarkers; AddRefOnce with a fresh key per call on 50 hot
// records; 1 writer operation by operation, 64 writers in alternating
// windows. It reports allocations per call of each side at 1 writer too.
//
//	go test -run '^$' -bench OnceMarkersPaired -benchtime 1x ./tests
func BenchmarkOnceMarkersPaired(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			plain := openRaw(b, name)
			require.NoError(b, plain.Migrator().DropTable(slotted.DefaultTable, slotted.DefaultOnceTable))
			require.NoError(b, plain.Use(slotted.New(slotted.Config{DisableOutcomeMarkers: true})))
			marked := openRaw(b, name)
			require.NoError(b, marked.Use(slotted.New(slotted.Config{})))
			for _, db := range []*gorm.DB{plain, marked} {
				if sqlDB, err := db.DB(); err == nil {
					sqlDB.SetMaxOpenConns(8)
				}
			}
			var seq atomic.Int64
			key := func() string { return "k" + strconv.FormatInt(seq.Add(1), 36) }
			sides := []side{
				{"plain", func(id uint) error {
					_, err := slotted.AddRefOnce(plain, slotted.Ref{Type: "bench.once.plain", ID: itoa(id)}, 1, key())
					return err
				}},
				{"markers", func(id uint) error {
					_, err := slotted.AddRefOnce(marked, slotted.Ref{Type: "bench.once.marked", ID: itoa(id)}, 1, key())
					return err
				}},
			}
			const rounds, records = 5, 50
			window := 700 * time.Millisecond
			for _, workers := range []int{1, 64} {
				var ratios []float64
				rates := map[string][]float64{}
				allocs := map[string][]float64{}
				for range rounds {
					got := map[string]float64{}
					if workers == 1 {
						for _, m := range interleaved(b, 2*window, sides, records) {
							got[m.name] = m.rate
							allocs[m.name] = append(allocs[m.name], m.allocs)
						}
					} else {
						for _, i := range rand.Perm(len(sides)) {
							s := sides[i]
							_, rate, _ := measure(b, window, workers, func() error { return s.op(uint(1 + rand.IntN(records))) })
							got[s.name] = rate
						}
					}
					for k, v := range got {
						rates[k] = append(rates[k], v)
					}
					ratios = append(ratios, got["markers"]/got["plain"])
				}
				w := itoa(uint(workers))
				b.ReportMetric(median(rates["plain"]), w+"w-plain-ops/s")
				b.ReportMetric(median(rates["markers"]), w+"w-markers-ops/s")
				b.ReportMetric(median(ratios), w+"w-markers/plain")
				b.ReportMetric(slices.Min(ratios), w+"w-min-markers/plain")
				b.ReportMetric(slices.Max(ratios), w+"w-max-markers/plain")
				if workers == 1 {
					b.ReportMetric(median(allocs["plain"]), "plain-allocs/op")
					b.ReportMetric(median(allocs["markers"]), "markers-allocs/op")
				}
			}
		})
	}
}
