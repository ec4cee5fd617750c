package tests

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// BenchVideo is the bucket and top-N benchmarks' model: likes is a plain
// counter, views a daily one, stars one with a cache column.
type BenchVideo struct {
	ID         uint `gorm:"primaryKey"`
	Title      string
	Likes      int64 `gorm:"-" slotted:"likes"`
	Views      int64 `gorm:"-" slotted:"views;buckets:day"`
	Stars      int64 `gorm:"-" slotted:"stars;cache:stars_count"`
	StarsCount int64 `gorm:"index"`
}

// benchNow is the benchmarks' clock: the window is 2026-11-17 .. 2026-11-23.
var benchNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func benchVideoDB(b *testing.B, name string) *gorm.DB {
	b.Helper()
	db, _, _ := benchDB(b, name)
	if err := db.Migrator().DropTable(&BenchVideo{}); err != nil {
		b.Fatal(err)
	}
	// A second plugin on the same tables, with the benchmarks' clock.
	vdb := openRaw(b, name)
	vdb.Config.Logger = db.Config.Logger
	if sqlDB, err := vdb.DB(); err == nil {
		sqlDB.SetMaxOpenConns(benchWriters)
		sqlDB.SetMaxIdleConns(benchWriters)
	}
	if err := vdb.Use(slotted.New(slotted.Config{Table: benchTable, Now: func() time.Time { return benchNow }})); err != nil {
		b.Fatal(err)
	}
	if err := vdb.AutoMigrate(&BenchVideo{}); err != nil {
		b.Fatal(err)
	}
	return vdb
}

// BenchmarkBucketedIncrementPaired decides whether a bucketed counter keeps
// its all-time total: 64 writers on one hot record, alternating windows of
//   - plain:    Increment of a counter without buckets (one row per statement);
//   - bucketed: Increment of a buckets:day counter (the total's row and the
//     bucket's, one statement);
//   - bucket-only: AddRef to the day's bucket alone (one row per statement:
//     what a write costs when the total is derived from the buckets instead),
//
// reporting the medians of the per-round ratios to plain.
func BenchmarkBucketedIncrementPaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 8)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db := benchVideoDB(b, name)
			v := BenchVideo{Title: "hot"}
			if err := db.Create(&v).Error; err != nil {
				b.Fatal(err)
			}
			bucket := slotted.Ref{Type: "bench_videos.views@2026-11-23", ID: fmt.Sprint(v.ID)}
			sides := []func() error{
				func() error { return slotted.Increment(db, &BenchVideo{ID: v.ID}, "likes") },
				func() error { return slotted.Increment(db, &BenchVideo{ID: v.ID}, "views") },
				func() error { return slotted.AddRef(db, bucket, 1) },
			}
			rates := make([][]float64, len(sides))
			var bucketed, only []float64
			for r := 0; r < rounds; r++ {
				got := make([]float64, len(sides))
				for i := range sides {
					k := (i + r) % len(sides) // rotate which side goes first
					got[k] = opsPerSec(b, window, sides[k])
					rates[k] = append(rates[k], got[k])
				}
				bucketed, only = append(bucketed, got[1]/got[0]), append(only, got[2]/got[0])
			}
			b.ReportMetric(median(rates[0]), "plain-ops/s")
			b.ReportMetric(median(rates[1]), "bucketed-ops/s")
			b.ReportMetric(median(rates[2]), "bucket-only-ops/s")
			b.ReportMetric(median(bucketed), "bucketed/plain")
			b.ReportMetric(median(only), "bucket-only/plain")
			b.ReportMetric(slices.Min(bucketed), "min-bucketed/plain")
			b.ReportMetric(slices.Max(bucketed), "max-bucketed/plain")
		})
	}
}

// numbers is each dialect's source of the rows s.seq in [lo, hi] x k.seq in [0, slots).
func numbers(name string, lo, hi, slots int) (from, text string) {
	switch name {
	case dbMySQL:
		return fmt.Sprintf("seq_%d_to_%d s JOIN seq_0_to_%d k", lo, hi, slots-1), "CAST(s.seq AS CHAR)"
	case dbPostgres:
		return fmt.Sprintf("generate_series(%d, %d) s(seq) CROSS JOIN generate_series(0, %d) k(seq)", lo, hi, slots-1), "s.seq::text"
	}
	return fmt.Sprintf("(WITH RECURSIVE n(seq) AS (SELECT %d UNION ALL SELECT seq + 1 FROM n WHERE seq < %d) SELECT seq FROM n) s "+
		"CROSS JOIN (WITH RECURSIVE n(seq) AS (SELECT 0 UNION ALL SELECT seq + 1 FROM n WHERE seq < %d) SELECT seq FROM n) k", lo, hi, slots-1), "CAST(s.seq AS TEXT)"
}

// seedTop fills bench_videos with records rows and the counter table with
//   - likes: records x slots rows (all-time, uncompacted);
//   - stars: one row per record, and stars_count rolled up;
//   - views: six closed days compacted to one row per record, and today over todaySlots rows per record,
//
// each count a deterministic function of (record, slot), so totals differ and tie.
func seedTop(b *testing.B, db *gorm.DB, name string, records, slots, todaySlots int) {
	b.Helper()
	quiet := db.Session(&gorm.Session{Logger: logger.Discard})
	exec := func(q string) {
		if err := quiet.Exec(q).Error; err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	start := time.Now()
	from, _ := numbers(name, 1, records, 1)
	exec(fmt.Sprintf("INSERT INTO bench_videos (id, title, stars_count) SELECT s.seq, 'v', (s.seq * 7919) %% 1009 FROM %s", from))
	const chunk = 10000 // records per INSERT, so no statement holds millions of rows
	for lo := 1; lo <= records; lo += chunk {
		hi := min(records, lo+chunk-1)
		from, text := numbers(name, lo, hi, slots)
		exec(fmt.Sprintf("INSERT INTO %s (record_type, record_id, slot, count) SELECT 'bench_videos.likes', %s, k.seq, (s.seq * 31 + k.seq * 17) %% 50 FROM %s", benchTable, text, from))
		from, text = numbers(name, lo, hi, todaySlots)
		exec(fmt.Sprintf("INSERT INTO %s (record_type, record_id, slot, count) SELECT 'bench_videos.views@2026-11-23', %s, k.seq, (s.seq * 13 + k.seq) %% 7 FROM %s", benchTable, text, from))
		from, text = numbers(name, lo, hi, 1)
		exec(fmt.Sprintf("INSERT INTO %s (record_type, record_id, slot, count) SELECT 'bench_videos.stars', %s, 0, (s.seq * 7919) %% 1009 FROM %s", benchTable, text, from))
		for d := 17; d <= 22; d++ {
			exec(fmt.Sprintf("INSERT INTO %s (record_type, record_id, slot, count) SELECT 'bench_videos.views@2026-11-%d', %s, 0, (s.seq * %d) %% 101 FROM %s", benchTable, d, text, d, from))
		}
	}
	analyze := "ANALYZE "
	if name == dbMySQL {
		analyze = "ANALYZE TABLE "
	}
	exec(analyze + benchTable)
	exec(analyze + "bench_videos")
	var rows int64
	quiet.Table(benchTable).Count(&rows)
	b.Logf("%s: seeded %d videos, %d counter rows in %v", name, records, rows, time.Since(start).Round(time.Second))
}

// BenchmarkTop ranks SLOTTED_BENCH_TOP_RECORDS (default 100,000) videos whose
// likes are spread over SLOTTED_BENCH_TOP_SLOTS (default 100) slot rows each:
// 10M rows. Seeding takes minutes, so run it alone with -benchtime 3x. With
// SLOTTED_BENCH_EXPLAIN=<file> it also appends the EXPLAIN of every query
// the bucket and ranking API sends to that file.
func BenchmarkTop(b *testing.B) {
	records := envInt("SLOTTED_BENCH_TOP_RECORDS", 100000)
	slots := envInt("SLOTTED_BENCH_TOP_SLOTS", 100)
	todaySlots := envInt("SLOTTED_BENCH_TOP_TODAY_SLOTS", 10)
	from, to := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db := benchVideoDB(b, name)
			seedTop(b, db, name, records, slots, todaySlots)
			if path := os.Getenv("SLOTTED_BENCH_EXPLAIN"); path != "" && name != dbSQLite {
				explainAll(b, db, name, path, from, to)
			}
			cases := []struct {
				name string
				fn   func() (int, error)
			}{
				{"TopRefs/likes", func() (int, error) { r, err := slotted.TopRefs(db, &BenchVideo{}, "likes", 10); return len(r), err }},
				{"Top/likes", func() (int, error) { r, err := slotted.Top(db, &BenchVideo{}, "likes", 10); return len(r), err }},
				{"OrderBy/likes/page-50", func() (int, error) {
					var page []BenchVideo
					err := db.Scopes(slotted.OrderBy(&BenchVideo{}, "likes", "DESC")).Order("id").Limit(10).Offset(500).Find(&page).Error
					return len(page), err
				}},
				{"Top/stars(cache)", func() (int, error) { r, err := slotted.Top(db, &BenchVideo{}, "stars", 10); return len(r), err }},
				{"TopRefsBetween/views/week", func() (int, error) {
					r, err := slotted.TopRefsBetween(db, &BenchVideo{}, "views", 10, from, to)
					return len(r), err
				}},
				{"TopBetween/views/week", func() (int, error) {
					r, err := slotted.TopBetween(db, &BenchVideo{}, "views", 10, from, to)
					return len(r), err
				}},
				{"CountBetween/views/week", func() (int, error) {
					_, err := slotted.CountBetween(db, &BenchVideo{ID: 4242}, "views", from, to)
					return 10, err
				}},
				{"LoadBetween/views/week/1000", func() (int, error) {
					vs := make([]BenchVideo, 1000)
					for i := range vs {
						vs[i].ID = uint(1 + i*97)
					}
					return 10, slotted.LoadBetween(db, &vs, from, to, "views")
				}},
			}
			for _, c := range cases {
				b.Run(c.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						n, err := c.fn()
						if err != nil || n != 10 {
							b.Fatal(n, err)
						}
					}
				})
			}
		})
	}
}

// explainAll appends the EXPLAIN of each statement the API sends for the
// seeded data to path (EXPLAIN on MariaDB; EXPLAIN ANALYZE on PostgreSQL).
func explainAll(b *testing.B, db *gorm.DB, name, path string, from, to time.Time) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	calls := []struct {
		what string
		fn   func(db *gorm.DB) error
	}{
		{"Increment of a bucketed counter", func(db *gorm.DB) error { return slotted.Increment(db, &BenchVideo{ID: 4242}, "views") }},
		{"CountBetween (one record, a week of days)", func(db *gorm.DB) error {
			_, err := slotted.CountBetween(db, &BenchVideo{ID: 4242}, "views", from, to)
			return err
		}},
		{"Series (one record, a week of days)", func(db *gorm.DB) error {
			_, err := slotted.Series(db, &BenchVideo{ID: 4242}, "views", from, to)
			return err
		}},
		{"LoadBetween (20 records, a week of days)", func(db *gorm.DB) error {
			vs := make([]BenchVideo, 20)
			for i := range vs {
				vs[i].ID = uint(1 + i*4999)
			}
			return slotted.LoadBetween(db, &vs, from, to, "views")
		}},
		{"TopRefs (all-time, 10M slot rows)", func(db *gorm.DB) error { _, err := slotted.TopRefs(db, &BenchVideo{}, "likes", 10); return err }},
		{"Top / OrderBy (all-time, 10M slot rows)", func(db *gorm.DB) error {
			_, err := slotted.Top(slotted.WithoutFill(db), &BenchVideo{}, "likes", 10)
			return err
		}},
		{"Top with a cache column", func(db *gorm.DB) error {
			_, err := slotted.Top(slotted.WithoutFill(db), &BenchVideo{}, "stars", 10)
			return err
		}},
		{"TopRefsBetween (a week)", func(db *gorm.DB) error {
			_, err := slotted.TopRefsBetween(db, &BenchVideo{}, "views", 10, from, to)
			return err
		}},
		{"TopBetween / OrderByBetween (a week)", func(db *gorm.DB) error {
			var vs []BenchVideo
			return slotted.WithoutFill(db).Scopes(slotted.OrderByBetween(&BenchVideo{}, "views", "DESC", from, to)).Order("id").Limit(10).Find(&vs).Error
		}},
		{"MaintainBuckets: retention's walk and batch (keep:3 would expire 11-17..11-20)", func(db *gorm.DB) error {
			var next string
			if err := slotted.Table(db).Select("MIN(record_type)").Where("record_type > ? AND record_type < ?", "bench_videos.views@", "bench_videos.views@2026-11-21").Row().Scan(&next); err != nil {
				return err
			}
			var rows []slotted.SlottedCounter
			return slotted.Table(db).Select("record_id", "slot").Where("record_type = ?", next).Order("record_id, slot").Limit(500).Find(&rows).Error
		}},
		{"MaintainBuckets: a closed day's compaction scan", func(db *gorm.DB) error {
			var refs []slotted.Ref
			return slotted.Table(db).Select("record_type, record_id").Where("record_type = ?", "bench_videos.views@2026-11-22").
				Group("record_type").Group("record_id").Having("COUNT(*) > ?", 1).Order("record_type, record_id").Limit(500).Find(&refs).Error
		}},
	}
	fmt.Fprintf(f, "\n## %s\n", name)
	for _, c := range calls {
		rec, r := recorded(db)
		if err := c.fn(rec); err != nil {
			b.Fatal(c.what, err)
		}
		for _, stmt := range r.statements() {
			fmt.Fprintf(f, "\n### %s\n\n```sql\n%s\n```\n\n```\n", c.what, shorten(stmt))
			explain := "EXPLAIN "
			if name == dbPostgres {
				explain = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "
			}
			if strings.HasPrefix(stmt, "INSERT") && name == dbPostgres {
				explain = "EXPLAIN (COSTS OFF) " // not run twice
			}
			rows, err := db.Session(&gorm.Session{Logger: logger.Discard}).Raw(explain + stmt).Rows()
			if err != nil {
				b.Fatal(c.what, err)
			}
			cols, _ := rows.Columns()
			if name != dbPostgres {
				fmt.Fprintln(f, strings.Join(cols, " | "))
			}
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					b.Fatal(err)
				}
				parts := make([]string, len(vals))
				for i, v := range vals {
					if bs, ok := v.([]byte); ok {
						v = string(bs)
					}
					parts[i] = fmt.Sprint(v)
				}
				fmt.Fprintln(f, strings.Join(parts, " | "))
			}
			rows.Close()
			fmt.Fprintln(f, "```")
		}
	}
}

// shorten elides the middle of long IN lists in a statement shown in the report.
func shorten(stmt string) string {
	if len(stmt) < 600 {
		return stmt
	}
	return stmt[:400] + " ... " + stmt[len(stmt)-150:]
}
