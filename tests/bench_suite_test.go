package tests

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// Benchmark suite for BENCHMARKS.md. Each benchmark runs on every database
// the harness has (SQLite always; MariaDB/PostgreSQL with their DSNs):
//
//	go test -run '^$' -bench 'Suite' -benchmem -benchtime 2s .

// BenchmarkSuiteIncrement: plugin vs raw prepared upsert vs single-row UPDATE at 1, 8, 32 and 64 writers.
func BenchmarkSuiteIncrement(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, sqlDB, post := benchDB(b, name)
			upsert, err := sqlDB.Prepare(rawUpsert(name))
			if err != nil {
				b.Fatal(err)
			}
			defer upsert.Close()
			single, err := sqlDB.Prepare(singleRowUpdate(name))
			if err != nil {
				b.Fatal(err)
			}
			defer single.Close()
			id := fmt.Sprint(post.ID)
			for _, workers := range []int{1, 8, 32, 64} {
				b.Run(fmt.Sprintf("w=%d/plugin", workers), func(b *testing.B) {
					parallelN(b, workers, func() error { p := BenchPost{ID: post.ID}; return slotted.Increment(db, &p, "likes") })
				})
				b.Run(fmt.Sprintf("w=%d/raw", workers), func(b *testing.B) {
					parallelN(b, workers, func() error {
						_, err := upsert.Exec("bench_posts.likes", id, rand.IntN(slotted.DefaultSlots), 1)
						return err
					})
				})
				b.Run(fmt.Sprintf("w=%d/single-row", workers), func(b *testing.B) {
					parallelN(b, workers, func() error { _, err := single.Exec(post.ID); return err })
				})
			}
		})
	}
}

// BenchmarkSuiteCount reads one counter spread over 100 slot rows.
func BenchmarkSuiteCount(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, _, post := benchDB(b, name)
			for i := 0; i < 500; i++ {
				if err := slotted.Increment(db, &post, "likes"); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := slotted.Count(db, &post, "likes"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSuiteLoad1000 fills the counter of 1000 records (100 slot rows each): slotted.Load against the
// hand-written GROUP BY it runs, scanned with database/sql (target: Load ≤ 1.2× raw).
func BenchmarkSuiteLoad1000(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, sqlDB, _ := benchDB(b, name)
			posts := make([]BenchPost, 1000)
			if err := db.CreateInBatches(&posts, 500).Error; err != nil {
				b.Fatal(err)
			}
			rows := make([]slotted.SlottedCounter, 0, 1000)
			for _, p := range posts {
				for s := 0; s < 100; s++ {
					rows = append(rows, slotted.SlottedCounter{RecordType: "bench_posts.likes", RecordID: slotted.Key(fmt.Sprint(p.ID)), Slot: int32(s), Count: 1})
					if len(rows) == cap(rows) {
						if err := slotted.Table(db).Create(&rows).Error; err != nil {
							b.Fatal(err)
						}
						rows = rows[:0]
					}
				}
			}
			b.Run("plugin", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if err := slotted.Load(db, posts, "likes"); err != nil {
						b.Fatal(err)
					}
					if posts[999].Likes != 100 {
						b.Fatal("wrong total", posts[999].Likes)
					}
				}
			})
			b.Run("raw-group-by", func(b *testing.B) {
				q, args := rawGroupBy(name, posts)
				totals := make(map[string]int64, len(posts))
				for i := 0; i < b.N; i++ {
					if err := scanTotals(sqlDB, q, args, totals); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkSuiteFind100 is db.Find of 100 posts with their counter auto-filled, against the same Find without the fill.
func BenchmarkSuiteFind100(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, _, _ := benchDB(b, name)
			posts := make([]BenchPost, 100)
			if err := db.Create(&posts).Error; err != nil {
				b.Fatal(err)
			}
			for i := range posts {
				if err := slotted.Add(db, &posts[i], "likes", int64(i+1)); err != nil {
					b.Fatal(err)
				}
			}
			for _, tc := range []struct {
				name string
				db   *gorm.DB
			}{{"auto-fill", db}, {"no-fill", slotted.WithoutFill(db)}} {
				b.Run(tc.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						var got []BenchPost
						if err := tc.db.Limit(100).Find(&got).Error; err != nil || len(got) != 100 {
							b.Fatal(err, len(got))
						}
					}
				})
			}
		})
	}
}

// BenchmarkSuiteTableSize is one writer's Increment with 1k against SLOTTED_BENCH_BIG (default 1M) counters in
// the counter table (target: within 1.2x). The two sizes live in two counter tables, each with its own plugin,
// and are measured in alternating 1-second rounds after the load has settled, so that background work (InnoDB
// flushing a freshly loaded million rows, autovacuum) falls on both sides. Reports the median of the per-round
// cost ratios (ignores b.N; run with -benchtime 1x).
func BenchmarkSuiteTableSize(b *testing.B) {
	big := envInt("SLOTTED_BENCH_BIG", 1_000_000)
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 8)
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			small, _, post := benchDB(b, name)
			large := openRaw(b, name)
			large.Config.Logger = small.Config.Logger
			if err := large.Migrator().DropTable("bench_counters_big"); err != nil {
				b.Fatal(err)
			}
			if err := large.Use(slotted.New(slotted.Config{Table: "bench_counters_big"})); err != nil {
				b.Fatal(err)
			}
			for _, side := range []struct {
				db *gorm.DB
				n  int
			}{{small, 1000}, {large, big}} {
				seedCounters(b, side.db.Session(&gorm.Session{Logger: logger.Discard}), "bench_posts.likes", side.n, 1)
			}
			settle(b, small)
			increment := func(db *gorm.DB) func() error {
				return func() error { p := BenchPost{ID: post.ID}; return slotted.Increment(db, &p, "likes") }
			}
			var ratios, smallRates, largeRates []float64
			for r := 0; r < rounds; r++ {
				var s, l float64
				if r%2 == 0 {
					s, l = opsPerSecN(b, time.Second, 1, increment(small)), opsPerSecN(b, time.Second, 1, increment(large))
				} else {
					l, s = opsPerSecN(b, time.Second, 1, increment(large)), opsPerSecN(b, time.Second, 1, increment(small))
				}
				ratios, smallRates, largeRates = append(ratios, s/l), append(smallRates, s), append(largeRates, l)
			}
			b.ReportMetric(median(smallRates), "1k-ops/s")
			b.ReportMetric(median(largeRates), "big-ops/s")
			b.ReportMetric(median(ratios), "big/1k-cost")
		})
	}
}

// settle waits for the server to absorb a bulk load: InnoDB until its dirty pages stop falling (MariaDB
// flushes lazily and leaves some for good), PostgreSQL through a checkpoint.
func settle(b *testing.B, db *gorm.DB) {
	switch db.Dialector.Name() {
	case "mysql":
		last := int64(-1)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
			var name string
			var dirty int64
			if err := db.Raw("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Row().Scan(&name, &dirty); err != nil {
				b.Fatal(err)
			}
			if dirty == last {
				return
			}
			last = dirty
		}
	case "postgres":
		if err := db.Exec("CHECKPOINT").Error; err != nil {
			b.Fatal(err)
		}
	}
}

func singleRowUpdate(name string) string {
	if name == dbPostgres {
		return "UPDATE bench_posts SET plain = plain + 1 WHERE id = $1"
	}
	return "UPDATE bench_posts SET plain = plain + 1 WHERE id = ?"
}

// rawGroupBy is the hand-written batched read: what Load sends, without gorm.
func rawGroupBy(name string, posts []BenchPost) (string, []any) {
	args := []any{"bench_posts.likes"}
	q := "SELECT record_type, record_id, SUM(count) FROM bench_counters WHERE record_type = ? AND record_id IN ("
	for i, p := range posts {
		if i > 0 {
			q += ","
		}
		q += "?"
		args = append(args, fmt.Sprint(p.ID))
	}
	q += ") GROUP BY record_type, record_id"
	if name == dbPostgres {
		var out []byte
		n := 0
		for i := 0; i < len(q); i++ {
			if q[i] == '?' {
				n++
				out = append(out, fmt.Sprintf("$%d", n)...)
				continue
			}
			out = append(out, q[i])
		}
		q = string(out)
	}
	return q, args
}

func scanTotals(db *sql.DB, q string, args []any, into map[string]int64) error {
	rows, err := db.Query(q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var typ, id string
		var n int64
		if err := rows.Scan(&typ, &id, &n); err != nil {
			return err
		}
		into[id] = n
	}
	return rows.Err()
}

// parallelN runs fn from exactly workers goroutines.
// RunParallel starts a multiple of GOMAXPROCS goroutines, so 1 writer is a plain loop.
func parallelN(b *testing.B, workers int, fn func() error) {
	if workers == 1 {
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := fn(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		return
	}
	procs := runtimeProcs()
	b.SetParallelism((workers + procs - 1) / procs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := fn(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
