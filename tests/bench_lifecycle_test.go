package tests

import (
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// seedCounters fills the bench counter table with counters × slots rows of count 1.
func seedCounters(b *testing.B, db *gorm.DB, recordType string, counters, slots int) {
	b.Helper()
	rows := make([]slotted.SlottedCounter, 0, 1000)
	flush := func() {
		if len(rows) > 0 {
			if err := slotted.Table(db).Create(&rows).Error; err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	for c := 0; c < counters; c++ {
		for s := 0; s < slots; s++ {
			rows = append(rows, slotted.SlottedCounter{RecordType: slotted.Key(recordType), RecordID: slotted.Key(fmt.Sprintf("%08d", c)), Slot: int32(s), Count: 1})
			if len(rows) == cap(rows) {
				flush()
			}
		}
	}
	flush()
	// Statistics as a table that grew gradually would have them: PostgreSQL
	// plans a freshly bulk-loaded, unanalyzed million rows as if it held a
	// hundred, and compacts ~20x slower (see BENCHMARKS.md).
	analyze := "ANALYZE " + benchTable
	if db.Dialector.Name() == "mysql" {
		analyze = "ANALYZE TABLE " + benchTable
	}
	if err := db.Exec(analyze).Error; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCompactAll folds SLOTTED_BENCH_COUNTERS (default 10,000) counters of 100 slot rows each
// (a million rows) into one row each, and reports counters and rows per second.
func BenchmarkCompactAll(b *testing.B) {
	counters := envInt("SLOTTED_BENCH_COUNTERS", 10000)
	const slots = 100
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, _, _ := benchDB(b, name)
			db = db.Session(&gorm.Session{Logger: db.Logger.LogMode(1)}) // silent: seeding a million rows is not news
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if err := slotted.Table(db).Where("1 = 1").Delete(&slotted.SlottedCounter{}).Error; err != nil {
					b.Fatal(err)
				}
				seedCounters(b, db, "bench.compact", counters, slots)
				b.StartTimer()
				prog, err := slotted.CompactAll(db)
				if err != nil {
					b.Fatal(err)
				}
				if prog.Counters != counters || prog.RowsRemoved != int64(counters*(slots-1)) {
					b.Fatalf("compacted %d counters, removed %d rows", prog.Counters, prog.RowsRemoved)
				}
			}
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(counters*b.N)/secs, "counters/s")
			b.ReportMetric(float64(counters*slots*b.N)/secs, "rows/s")
		})
	}
}

// BenchmarkCountCompacted compares reading a counter spread over 100 slot rows with reading it compacted into one.
func BenchmarkCountCompacted(b *testing.B) {
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			db, _, _ := benchDB(b, name)
			seedCounters(b, db, "bench.read", 1, 100)
			seedCounters(b, db, "bench.read.compacted", 1, 100)
			one := slotted.Ref{Type: "bench.read.compacted", ID: "00000000"}
			if err := slotted.CompactRef(db, one); err != nil {
				b.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				ref  slotted.Ref
			}{{"100-slots", slotted.Ref{Type: "bench.read", ID: "00000000"}}, {"compacted", one}} {
				b.Run(tc.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						n, err := slotted.CountRef(db, tc.ref)
						if err != nil || n != 100 {
							b.Fatal(n, err)
						}
					}
				})
			}
		})
	}
}
