package tests

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// GaleraBench has one counter per slot count the benchmark compares.
type GaleraBench struct {
	ID      uint
	One     int64 `gorm:"-" slotted:"one;slots:1"`
	Sixteen int64 `gorm:"-" slotted:"sixteen;slots:16"`
	Hundred int64 `gorm:"-" slotted:"hundred;slots:100"`
}

// BenchmarkGaleraContention measures increments of one hot counter from
// writers on all three Galera nodes (SLOTTED_GALERA_WRITERS per node, default
// 16) at 1, 16 and 100 slots, with the plugin's Galera retry defaults and with
// the single-server defaults (5 retries, 2ms..100ms), alternating windows of
// the two so that drift on a shared machine hits both alike. It reports
// successful increments per second and the share of calls that returned an
// error after the retries, and checks that every node's total is exact. It
// ignores b.N: SLOTTED_BENCH_ROUNDS rounds (default 3) of
// SLOTTED_BENCH_WINDOW_MS (default 4000) per side and slot count.
//
//	scripts/galera.sh start && eval "$(scripts/galera.sh env)"
//	go test ./tests -run '^$' -bench GaleraContention -benchtime 1x
func BenchmarkGaleraContention(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 3)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 4000)) * time.Millisecond
	writers := envInt("SLOTTED_GALERA_WRITERS", 16)
	nodes := galeraCluster(b, slotted.Config{})
	if err := nodes[0].AutoMigrate(&GaleraBench{}); err != nil {
		b.Fatal(err)
	}
	old := slotted.Config{MaxRetries: 5, MinRetryBackoff: 2 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond}
	var oldNodes []*gorm.DB
	for _, dsn := range galeraDSNs(b) {
		oldNodes = append(oldNodes, galeraNode(b, dsn, old))
	}
	for _, n := range nodes {
		grow(b, n, writers)
	}
	for _, n := range oldNodes {
		grow(b, n, writers)
	}
	var id uint
	for _, counter := range []string{"one", "sixteen", "hundred"} {
		b.Run(counter, func(b *testing.B) {
			var cur, prev contention
			for r := range rounds {
				sides := []func(){
					func() { id++; cur.add(contend(b, nodes, writers, window, id, counter)) },
					func() { id++; prev.add(contend(b, oldNodes, writers, window, id, counter)) },
				}
				if r%2 == 1 {
					sides[0], sides[1] = sides[1], sides[0]
				}
				sides[0]()
				sides[1]()
			}
			b.ReportMetric(cur.rate(), "ok/s")
			b.ReportMetric(cur.failedPct(), "%failed")
			b.ReportMetric(prev.rate(), "old-ok/s")
			b.ReportMetric(prev.failedPct(), "old-%failed")
		})
	}
}

// grow lets every writer on a node hold a connection.
func grow(b *testing.B, db *gorm.DB, writers int) {
	sqlDB, err := db.DB()
	if err != nil {
		b.Fatal(err)
	}
	sqlDB.SetMaxIdleConns(writers + 2)
}

type contention struct {
	ok, failed int64
	took       time.Duration
}

func (c *contention) add(d contention) { c.ok += d.ok; c.failed += d.failed; c.took += d.took }
func (c contention) rate() float64     { return float64(c.ok) / c.took.Seconds() }
func (c contention) failedPct() float64 {
	return 100 * float64(c.failed) / float64(max(1, c.ok+c.failed))
}

// contend runs writers goroutines per node incrementing record id's counter
// for d, then checks the total on every node.
func contend(b *testing.B, nodes []*gorm.DB, writers int, d time.Duration, id uint, counter string) contention {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, db := range nodes {
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if err := slotted.Increment(db, &GaleraBench{ID: id}, counter); err != nil {
						if slotted.ConflictOf(err) == slotted.NoConflict {
							b.Error(err)
							return
						}
						failed.Add(1)
						continue
					}
					ok.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	took := time.Since(start)
	ref, err := slotted.RefOf(nodes[0], &GaleraBench{ID: id}, counter)
	if err != nil {
		b.Fatal(err)
	}
	for i, db := range nodes {
		if n := causalCount(b, db, ref); n != ok.Load() {
			b.Errorf("node %d: total %d, %d increments succeeded", i+1, n, ok.Load())
		}
	}
	return contention{ok: ok.Load(), failed: failed.Load(), took: took}
}
