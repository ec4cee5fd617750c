package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotted-go/slotted"
)

// BenchmarkWriteBehind measures buffer.Add (write-behind: returns at once, flushed every 100ms) against
// slotted.Increment with coalescing, alternating windows as BenchmarkCoalescePaired does, at 1, 64 and 256
// writers on one hot record and on 1000 records: ops/s, p50 and p99 latency of the call, allocations per op.
// After the run the buffer is closed and every total is checked. Ignores b.N: run with -benchtime 1x.
//
//	go test -run '^$' -bench 'WriteBehind' -benchtime 1x ./tests
func BenchmarkWriteBehind(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 5)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			env := newCoalesceBench(b, name)
			buf, err := slotted.NewBuffer(env.perOp, slotted.BufferOptions{Interval: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			var buffered int64
			for _, workers := range []int{1, 64, 256} {
				for _, records := range []int{1, 1000} {
					b.Run(fmt.Sprintf("w=%d/records=%d", workers, records), func(b *testing.B) {
						sides := []side{
							{"write-behind", func(id uint) error { p := BenchPost{ID: id}; return buf.Add(&p, "likes", 1) }},
							{"coalesced", func(id uint) error { p := BenchPost{ID: id}; return slotted.Increment(env.coalesced, &p, "likes") }},
						}
						res := map[string][]latencyRun{}
						for r := 0; r < rounds; r++ {
							for i := range sides {
								s := sides[(i+r)%len(sides)]
								lr := timed(b, window, workers, func() error { return s.op(uint(1 + rand.IntN(records))) })
								res[s.name] = append(res[s.name], lr)
								if s.name == "coalesced" {
									env.want["coalesced"] += lr.ops
								} else {
									buffered += lr.ops
								}
							}
						}
						for _, s := range sides {
							runs := res[s.name]
							b.ReportMetric(median(pick(runs, func(l latencyRun) float64 { return l.rate })), s.name+"-ops/s")
							b.ReportMetric(median(pick(runs, func(l latencyRun) float64 { return l.p50 })), s.name+"-p50-µs")
							b.ReportMetric(median(pick(runs, func(l latencyRun) float64 { return l.p99 })), s.name+"-p99-µs")
							b.ReportMetric(median(pick(runs, func(l latencyRun) float64 { return l.allocs })), s.name+"-allocs/op")
						}
						st := buf.Stats()
						b.ReportMetric(float64(st.Pending), "pending-counters")
						b.ReportMetric(float64(st.FlushErrors), "flush-errors")
					})
				}
			}
			if err := buf.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			env.want["per-op"] += buffered // the buffer writes through the per-op plugin's table
		})
	}
}

type latencyRun struct {
	ops                    int64
	rate, p50, p99, allocs float64
}

func pick(runs []latencyRun, f func(latencyRun) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

// timed runs fn from workers goroutines for d, timing every call (latencies in µs).
func timed(b *testing.B, d time.Duration, workers int, fn func() error) latencyRun {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 1<<14)
			for ctx.Err() == nil {
				t0 := time.Now()
				if err := fn(); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			lat[w] = mine
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := latencyRun{ops: int64(len(all))}
	if len(all) == 0 {
		return r
	}
	r.rate = float64(len(all)) / elapsed.Seconds()
	r.p50 = float64(all[len(all)/2].Nanoseconds()) / 1e3
	r.p99 = float64(all[len(all)*99/100].Nanoseconds()) / 1e3
	r.allocs = float64(after.Mallocs-before.Mallocs) / float64(len(all))
	return r
}
