package tests

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// plainPair opens two handles on one SQLite file with ten plain books: one
// without the plugin and one with it. One connection each, so that
// database/sql's pool does the same work on every call.
func plainPair(tb testing.TB) (plain, withPlugin *gorm.DB) {
	tb.Helper()
	dsn := sqliteDSN(filepath.Join(tb.TempDir(), "plain.db"), 10000, true)
	open := func() *gorm.DB {
		db, err := gorm.Open(sqliteOpen(dsn), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			tb.Fatal(err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			tb.Fatal(err)
		}
		sqlDB.SetMaxOpenConns(1)
		tb.Cleanup(func() { _ = sqlDB.Close() })
		return db
	}
	plain, withPlugin = open(), open()
	if err := withPlugin.Use(slotted.New(slotted.Config{})); err != nil {
		tb.Fatal(err)
	}
	if err := plain.AutoMigrate(plainModels...); err != nil {
		tb.Fatal(err)
	}
	a := PlainAuthor{Name: "a"}
	if err := plain.Create(&a).Error; err != nil {
		tb.Fatal(err)
	}
	for i := range 10 {
		if err := plain.Create(&PlainBook{Title: fmt.Sprint("b", i), AuthorID: a.ID}).Error; err != nil {
			tb.Fatal(err)
		}
	}
	return plain, withPlugin
}

// plainOps are the calls measured: a Find of ten rows and a Create, of a
// model without counters.
var plainOps = []struct {
	name string
	op   func(db *gorm.DB) error
}{
	{"Find", func(db *gorm.DB) error {
		var bs []PlainBook
		return db.Where("author_id = ?", 1).Find(&bs).Error
	}},
	{"Create", func(db *gorm.DB) error { return db.Create(&PlainTag{Name: "tag"}).Error }},
}

// BenchmarkPlainGORM measures plain gorm calls on a model without counters,
// without and with the plugin registered: run with -benchmem and compare
// allocs/op of the plain and plugin halves of each pair.
func BenchmarkPlainGORM(b *testing.B) {
	plain, withPlugin := plainPair(b)
	for _, o := range plainOps {
		for _, h := range []struct {
			name string
			db   *gorm.DB
		}{{"plain", plain}, {"plugin", withPlugin}} {
			b.Run(o.name+"/"+h.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := o.op(h.db); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestPlainGORMAllocations requires that registering the plugin adds no
// allocation to plain gorm calls on a model without counters.
//
// Counting allocations is exact only where nothing else varies: the collector
// is off (it empties sync.Pools), both sides are warmed up first (the first
// few hundred calls allocate a little less as the table grows), and Create
// runs without gorm's default transaction, because database/sql starts a
// goroutine for every Rows inside a transaction and allocates a goroutine
// descriptor only when none is free to reuse. The plugin's create callback
// runs either way. Each side is then measured three times, interleaved, and
// its fewest allocations per call compared.
func TestPlainGORMAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not exact under the race detector; .ci/run runs this test without it")
	}
	plain, withPlugin := plainPair(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, o := range plainOps {
		t.Run(o.name, func(t *testing.T) {
			run := func(db *gorm.DB) func() {
				db = db.Session(&gorm.Session{SkipDefaultTransaction: true})
				return func() {
					if err := o.op(db); err != nil {
						t.Fatal(err)
					}
				}
			}
			without, with := run(plain), run(withPlugin)
			for range 500 {
				without()
				with()
			}
			least := [2]float64{math.Inf(1), math.Inf(1)}
			for range 3 {
				least[0] = min(least[0], testing.AllocsPerRun(100, without))
				least[1] = min(least[1], testing.AllocsPerRun(100, with))
			}
			t.Logf("%s allocs/op: %v without the plugin, %v with it", o.name, least[0], least[1])
			if least[1] > least[0] {
				t.Errorf("%s: %v allocs/op with the plugin, %v without: plain gorm must not pay for the plugin", o.name, least[1], least[0])
			}
		})
	}
}
