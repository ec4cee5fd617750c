package tests

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// BenchSeat and BenchSeatOne are the same records under a composite key
// (org, handle) and a single-column one, each with its cache column indexed
// together with the key (ReadFast's index).
type BenchSeat struct {
	Org        uint   `gorm:"primaryKey;autoIncrement:false;index:idx_bench_seats_likes,priority:2"`
	Handle     string `gorm:"primaryKey;size:64;index:idx_bench_seats_likes,priority:3"`
	Likes      int64  `gorm:"-" slotted:"likes;slots:10;cache:likes_count"`
	LikesCount int64  `gorm:"index:idx_bench_seats_likes,priority:1"`
}

type BenchSeatOne struct {
	ID         uint  `gorm:"primaryKey;index:idx_bench_seat_ones_likes,priority:2"`
	Likes      int64 `gorm:"-" slotted:"likes;slots:10;cache:likes_count"`
	LikesCount int64 `gorm:"index:idx_bench_seat_ones_likes,priority:1"`
}

const benchCListTable = "slotted_bench_clist"

// BenchmarkCompositeListing compares a composite key with a single-column
// one on the same SLOTTED_BENCH_CLIST_RECORDS records (default 20,000):
// AddWhere over all of them (one INSERT … SELECT computing each record_id),
// List's fast path (first page, and a page at the middle rank by cursor) and
// exact path (first page), Limit 20. Each read is timed 7 times; the median
// is reported in ms. Run alone with -benchtime 1x.
func BenchmarkCompositeListing(b *testing.B) {
	records := envInt("SLOTTED_BENCH_CLIST_RECORDS", 20000)
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db := openRaw(b, name)
			db.Config.Logger = logger.Discard
			if err := db.Migrator().DropTable(&BenchSeat{}, &BenchSeatOne{}, benchCListTable); err != nil {
				b.Fatal(err)
			}
			if err := db.Use(slotted.New(slotted.Config{Table: benchCListTable})); err != nil {
				b.Fatal(err)
			}
			if err := db.AutoMigrate(&BenchSeat{}, &BenchSeatOne{}); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Migrator().DropTable(&BenchSeat{}, &BenchSeatOne{}, benchCListTable) })
			seats, ones := make([]BenchSeat, records), make([]BenchSeatOne, records)
			for i := range records {
				lc := int64(i*7919) % 1009
				seats[i] = BenchSeat{Org: uint(i/100 + 1), Handle: fmt.Sprintf("h,%d%%", i%100), LikesCount: lc}
				ones[i] = BenchSeatOne{ID: uint(i + 1), LikesCount: lc}
			}
			if err := db.CreateInBatches(&seats, 1000).Error; err != nil {
				b.Fatal(err)
			}
			if err := db.CreateInBatches(&ones, 1000).Error; err != nil {
				b.Fatal(err)
			}
			all := db.Session(&gorm.Session{AllowGlobalUpdate: true})
			for _, m := range []struct {
				name  string
				model any
				list  func(slotted.ListOptions) (string, error)
			}{
				{"composite", &BenchSeat{}, func(o slotted.ListOptions) (string, error) {
					p, err := slotted.List(db, &BenchSeat{}, "likes", o)
					if err != nil {
						return "", err
					}
					return p.Next, nil
				}},
				{"single", &BenchSeatOne{}, func(o slotted.ListOptions) (string, error) {
					p, err := slotted.List(db, &BenchSeatOne{}, "likes", o)
					if err != nil {
						return "", err
					}
					return p.Next, nil
				}},
			} {
				start := time.Now()
				for range 3 {
					if err := slotted.AddWhere(all.Model(m.model), "likes", 1); err != nil {
						b.Fatal(err)
					}
				}
				addWhere := float64(time.Since(start).Microseconds()) / 3000
				deep, err := m.list(slotted.ListOptions{Limit: 20, Read: slotted.ReadFast, Offset: records/2 - 20})
				if err != nil || deep == "" {
					b.Fatal(err, "no cursor")
				}
				timed := func(o slotted.ListOptions) float64 {
					var ms []float64
					for range 7 {
						start := time.Now()
						if _, err := m.list(o); err != nil {
							b.Fatal(err)
						}
						ms = append(ms, float64(time.Since(start).Microseconds())/1000)
					}
					return median(ms)
				}
				fast := timed(slotted.ListOptions{Limit: 20, Read: slotted.ReadFast})
				fastDeep := timed(slotted.ListOptions{Limit: 20, Read: slotted.ReadFast, After: deep})
				exact := timed(slotted.ListOptions{Limit: 20, Read: slotted.ReadExact})
				b.Logf("%s %s, %d records: AddWhere %.1f ms/statement; List fast first %.2f ms, fast at rank %d by cursor %.2f ms, exact first %.1f ms",
					name, m.name, records, addWhere, fast, records/2, fastDeep, exact)
			}
		})
	}
}
