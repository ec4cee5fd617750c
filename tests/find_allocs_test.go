package tests

import (
	"testing"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Plain is a model without counters.
type Plain struct {
	ID    uint
	Title string
}

// plainDBs returns two handles on one SQLite file holding three Plain rows:
// one with the plugin registered, one without.
func plainDBs(tb testing.TB) (withPlugin, without *gorm.DB) {
	tb.Helper()
	without = openRaw(tb, dbSQLite)
	withPlugin = openRaw(tb, dbSQLite) // the same file
	must(tb, withPlugin.Use(slotted.New(slotted.Config{})))
	must(tb, withPlugin.Migrator().DropTable(&Plain{}))
	must(tb, withPlugin.AutoMigrate(&Plain{}))
	must(tb, withPlugin.Create(&[]Plain{{Title: "a"}, {Title: "b"}, {Title: "c"}}).Error)
	return withPlugin, without
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// findPlain runs one Find of every Plain row into rows.
func findPlain(db *gorm.DB, rows *[]Plain) error {
	*rows = (*rows)[:0]
	return db.Find(rows).Error
}

// A Find of a model without counters costs no allocation more with the plugin
// registered than without it: auto-fill looks at the cached metadata before
// anything else.
func TestFindWithoutCountersAllocatesNothingExtra(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under -race; .ci/run runs this test without it")
	}
	withPlugin, without := plainDBs(t)
	allocs := func(db *gorm.DB) float64 {
		var rows []Plain
		must(t, findPlain(db, &rows)) // warm gorm's schema cache and the connection
		if len(rows) != 3 {
			t.Fatalf("found %d rows, want 3", len(rows))
		}
		return testing.AllocsPerRun(200, func() { must(t, findPlain(db, &rows)) })
	}
	base, plugin := allocs(without), allocs(withPlugin)
	t.Logf("allocs per Find of a model without counters: %.0f without the plugin, %.0f with it", base, plugin)
	if plugin > base {
		t.Fatalf("the plugin adds %.0f allocations to a Find of a model without counters", plugin-base)
	}
}

// BenchmarkFindWithoutCounters: a Find of a model without counters with the
// plugin registered and without it (SQLite; run with -benchmem).
func BenchmarkFindWithoutCounters(b *testing.B) {
	withPlugin, without := plainDBs(b)
	for _, c := range []struct {
		name string
		db   *gorm.DB
	}{{"plugin", withPlugin}, {"no-plugin", without}} {
		b.Run(c.name, func(b *testing.B) {
			var rows []Plain
			b.ReportAllocs()
			for b.Loop() {
				must(b, findPlain(c.db, &rows))
			}
		})
	}
}
