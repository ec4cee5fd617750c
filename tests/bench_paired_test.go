package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotted-go/slotted"
)

// BenchmarkIncrementPaired measures plugin/raw as a ratio that survives the
// drift of a 2-core machine shared with the database server: it alternates
// short windows of the plugin and of the raw prepared upsert (swapping which
// goes first every round), each with benchWriters goroutines on one hot
// record, and reports the median of the per-round ratios. It ignores b.N and
// runs once: SLOTTED_BENCH_ROUNDS rounds (default 8) of SLOTTED_BENCH_WINDOW
// (default 1s) per side.
func BenchmarkIncrementPaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 8)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, sqlDB, post := benchDB(b, name)
			stmt, err := sqlDB.Prepare(rawUpsert(name))
			if err != nil {
				b.Fatal(err)
			}
			defer stmt.Close()
			id := fmt.Sprint(post.ID)
			plugin := func() error { p := BenchPost{ID: post.ID}; return slotted.Increment(db, &p, "likes") }
			raw := func() error {
				_, err := stmt.Exec("bench_posts.likes", id, rand.IntN(slotted.DefaultSlots), 1)
				return err
			}
			var ratios, pluginRates, rawRates []float64
			for r := 0; r < rounds; r++ {
				var pr, rr float64
				if r%2 == 0 {
					pr = opsPerSec(b, window, plugin)
					rr = opsPerSec(b, window, raw)
				} else {
					rr = opsPerSec(b, window, raw)
					pr = opsPerSec(b, window, plugin)
				}
				ratios, pluginRates, rawRates = append(ratios, pr/rr), append(pluginRates, pr), append(rawRates, rr)
			}
			b.ReportMetric(median(pluginRates), "plugin-ops/s")
			b.ReportMetric(median(rawRates), "raw-ops/s")
			b.ReportMetric(median(ratios), "plugin/raw")
			b.ReportMetric(slices.Min(ratios), "min-ratio")
			b.ReportMetric(slices.Max(ratios), "max-ratio")
		})
	}
}

// opsPerSec runs fn from benchWriters goroutines for d and returns completed calls per second.
func opsPerSec(b *testing.B, d time.Duration, fn func() error) float64 {
	return opsPerSecN(b, d, benchWriters, fn)
}

// opsPerSecN runs fn from workers goroutines for d and returns completed calls per second.
func opsPerSecN(b *testing.B, d time.Duration, workers int, fn func() error) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ops atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := fn(); err != nil {
					b.Error(err)
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}
