package tests

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// BenchmarkOutcomeMarkersPaired: the cost of outcome markers (the default) without
// faults, paired: two pools on the same database, one with markers, one
// without, measured in alternating cells (1 writer: operation by operation;
// 64 writers: windows in random order), 50 hot records.
//
//	go test -run '^$' -bench OutcomeMarkersPaired -benchtime 1x ./tests
func BenchmarkOutcomeMarkersPaired(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			plain := openRaw(b, name)
			require.NoError(b, plain.Migrator().DropTable(slotted.DefaultTable))
			require.NoError(b, plain.Use(slotted.New(slotted.Config{DisableOutcomeMarkers: true})))
			marked := openRaw(b, name)
			require.NoError(b, marked.Use(slotted.New(slotted.Config{OutcomeMarkers: true})))
			for _, db := range []*gorm.DB{plain, marked} {
				if sqlDB, err := db.DB(); err == nil {
					sqlDB.SetMaxOpenConns(8)
				}
			}
			sides := []side{
				{"plain", func(id uint) error { return slotted.AddRef(plain, slotted.Ref{Type: "bench.plain", ID: itoa(id)}, 1) }},
				{"markers", func(id uint) error { return slotted.AddRef(marked, slotted.Ref{Type: "bench.marked", ID: itoa(id)}, 1) }},
			}
			const rounds, records = 5, 50
			window := 700 * time.Millisecond
			for _, workers := range []int{1, 64} {
				var ratios []float64
				rates := map[string][]float64{}
				for range rounds {
					got := map[string]float64{}
					if workers == 1 {
						for _, m := range interleaved(b, 2*window, sides, records) {
							got[m.name] = m.rate
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
				b.ReportMetric(median(rates["plain"]), itoa(uint(workers))+"w-plain-ops/s")
				b.ReportMetric(median(rates["markers"]), itoa(uint(workers))+"w-markers-ops/s")
				b.ReportMetric(median(ratios), itoa(uint(workers))+"w-markers/plain")
				b.ReportMetric(slices.Min(ratios), itoa(uint(workers))+"w-min-markers/plain")
				b.ReportMetric(slices.Max(ratios), itoa(uint(workers))+"w-max-markers/plain")
			}
		})
	}
}
