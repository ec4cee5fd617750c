package tests

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// BenchListing is BenchmarkListing's model: likes over 100 slots with a
// cache column indexed together with the key (the fast path's index), views
// per day (Trending).
type BenchListing struct {
	ID         uint  `gorm:"primaryKey;index:idx_bench_listings_likes_count,priority:2"`
	Likes      int64 `gorm:"-" slotted:"likes;cache:likes_count"`
	LikesCount int64 `gorm:"index:idx_bench_listings_likes_count,priority:1"`
	Views      int64 `gorm:"-" slotted:"views;buckets:day"`
}

// seedListing fills bench_listings with records rows and the counter table
// with likes over slots rows per record (slot 0 holds (id*7919)%1009, the
// others 1, so likes_count = (id*7919)%1009 + slots-1 is the exact total),
// six closed days of views compacted to one row per record, and today's over
// 10 slot rows. Bulk INSERT … SELECT from a sequence, 10,000 records a statement.
func seedListing(b *testing.B, db *gorm.DB, name string, records, slots int) {
	b.Helper()
	quiet := db.Session(&gorm.Session{Logger: logger.Discard})
	exec := func(q string) {
		if err := quiet.Exec(q).Error; err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	start := time.Now()
	from, _ := numbers(name, 1, records, 1)
	exec(fmt.Sprintf("INSERT INTO bench_listings (id, likes_count) SELECT s.seq, (s.seq * 7919) %% 1009 + %d FROM %s", slots-1, from))
	const chunk = 10000
	for lo := 1; lo <= records; lo += chunk {
		hi := min(records, lo+chunk-1)
		from, text := numbers(name, lo, hi, slots)
		exec(fmt.Sprintf("INSERT INTO %s (record_type, record_id, slot, count) SELECT 'bench_listings.likes', %s, k.seq, "+
			"CASE WHEN k.seq = 0 THEN (s.seq * 7919) %% 1009 ELSE 1 END FROM %s", benchTable, text, from))
		from, text = numbers(name, lo, hi, 10)
		exec(fmt.Sprintf("INSERT INTO %s (record_type, record_id, slot, count) SELECT 'bench_listings.views@2026-11-23', %s, k.seq, (s.seq * 13 + k.seq) %% 7 FROM %s", benchTable, text, from))
		from, text = numbers(name, lo, hi, 1)
		for d := 17; d <= 22; d++ {
			exec(fmt.Sprintf("INSERT INTO %s (record_type, record_id, slot, count) SELECT 'bench_listings.views@2026-11-%d', %s, 0, (s.seq * %d) %% 101 FROM %s", benchTable, d, text, d, from))
		}
	}
	analyze := "ANALYZE "
	if name == dbMySQL {
		analyze = "ANALYZE TABLE "
	}
	exec(analyze + benchTable)
	exec(analyze + "bench_listings")
	var rows int64
	quiet.Table(benchTable).Count(&rows)
	b.Logf("%s: seeded %d listings, %d counter rows in %v", name, records, rows, time.Since(start).Round(time.Second))
}

// BenchmarkListing pages SLOTTED_BENCH_LIST_RECORDS (default 100,000)
// records whose likes are spread over SLOTTED_BENCH_LIST_SLOTS (default 100)
// slot rows each: List's fast path (the cache column) and exact path (the
// live sum), first pages and a page at rank 50,000 by cursor and by offset,
// and Trending over a week of daily views. Each call is timed
// SLOTTED_BENCH_LIST_REPS times (default 15; exact and trending calls 2
// times) and the median, min and max are reported in ms. Seeding takes
// minutes: run it alone with -benchtime 1x.
func BenchmarkListing(b *testing.B) {
	records := envInt("SLOTTED_BENCH_LIST_RECORDS", 100000)
	slots := envInt("SLOTTED_BENCH_LIST_SLOTS", 100)
	reps := envInt("SLOTTED_BENCH_LIST_REPS", 15)
	deep := records / 2
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			base, _, _ := benchDB(b, name)
			if err := base.Migrator().DropTable(&BenchListing{}); err != nil {
				b.Fatal(err)
			}
			db := openRaw(b, name)
			db.Config.Logger = base.Config.Logger
			if err := db.Use(slotted.New(slotted.Config{Table: benchTable, Now: func() time.Time { return benchNow }})); err != nil {
				b.Fatal(err)
			}
			if err := db.AutoMigrate(&BenchListing{}); err != nil {
				b.Fatal(err)
			}
			seedListing(b, db, name, records, slots)
			list := func(o slotted.ListOptions) (*slotted.Page[BenchListing], error) {
				o.Limit = 20
				return slotted.List(db, &BenchListing{}, "likes", o)
			}
			trend := func(o slotted.TrendOptions) (*slotted.Page[BenchListing], error) {
				o.Limit, o.Buckets, o.HalfLife = 20, 7, 1
				return slotted.Trending(db, &BenchListing{}, "views", o)
			}
			cursorAt := func(read slotted.Read) string {
				p, err := list(slotted.ListOptions{Read: read, Offset: deep - 20})
				if err != nil || p.Next == "" {
					b.Fatal(err, "no cursor")
				}
				return p.Next
			}
			fastDeep := cursorAt(slotted.ReadFast)
			exactDeep := cursorAt(slotted.ReadExact)
			p, err := trend(slotted.TrendOptions{Offset: deep - 20})
			if err != nil || p.Next == "" {
				b.Fatal(err, "no trending cursor")
			}
			trendDeep := p.Next
			// The fast and exact paths agree here: likes_count is the seeded total.
			pf, _ := list(slotted.ListOptions{Read: slotted.ReadFast})
			pe, _ := list(slotted.ListOptions{Read: slotted.ReadExact})
			if !slices.Equal(pf.Totals, pe.Totals) {
				b.Fatalf("fast %v != exact %v", pf.Totals, pe.Totals)
			}
			cases := []struct {
				name string
				reps int
				fn   func() (*slotted.Page[BenchListing], error)
			}{
				{"fast/first", reps, func() (*slotted.Page[BenchListing], error) { return list(slotted.ListOptions{Read: slotted.ReadFast}) }},
				{"fast/first-nofill", reps, func() (*slotted.Page[BenchListing], error) {
					return slotted.List(slotted.WithoutFill(db), &BenchListing{}, "likes", slotted.ListOptions{Limit: 20, Read: slotted.ReadFast})
				}},
				{"fast/cursor@50%", reps, func() (*slotted.Page[BenchListing], error) {
					return list(slotted.ListOptions{Read: slotted.ReadFast, After: fastDeep})
				}},
				{"fast/offset@50%", reps, func() (*slotted.Page[BenchListing], error) {
					return list(slotted.ListOptions{Read: slotted.ReadFast, Offset: deep})
				}},
				{"exact/first", 2, func() (*slotted.Page[BenchListing], error) { return list(slotted.ListOptions{Read: slotted.ReadExact}) }},
				{"exact/cursor@50%", 2, func() (*slotted.Page[BenchListing], error) {
					return list(slotted.ListOptions{Read: slotted.ReadExact, After: exactDeep})
				}},
				{"trending-week/first", 2, func() (*slotted.Page[BenchListing], error) { return trend(slotted.TrendOptions{}) }},
				{"trending-week/cursor@50%", 2, func() (*slotted.Page[BenchListing], error) { return trend(slotted.TrendOptions{After: trendDeep}) }},
				{"TopBetween-week(flat)", 2, func() (*slotted.Page[BenchListing], error) {
					top, err := slotted.TopBetween(db, &BenchListing{}, "views", 20, time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
					return &slotted.Page[BenchListing]{Items: top}, err
				}},
			}
			for range b.N {
				for _, c := range cases {
					var ms []float64
					for range c.reps {
						start := time.Now()
						page, err := c.fn()
						if err != nil || len(page.Items) != 20 {
							b.Fatal(c.name, err)
						}
						ms = append(ms, float64(time.Since(start).Microseconds())/1000)
					}
					slices.Sort(ms)
					b.ReportMetric(ms[len(ms)/2], c.name+"-ms")
					b.Logf("%s %-26s median %9.1f ms  min %9.1f  max %9.1f  (%d calls)", name, c.name, ms[len(ms)/2], ms[0], ms[len(ms)-1], len(ms))
				}
			}
		})
	}
}
