package tests

import (
	"context"
	"log"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// elapsedLog is a gorm logger that keeps every statement with the time gorm says it took.
type elapsedLog struct {
	mu   sync.Mutex
	sql  []string
	took []time.Duration
}

func (r *elapsedLog) LogMode(logger.LogLevel) logger.Interface      { return r }
func (r *elapsedLog) Info(context.Context, string, ...interface{})  {}
func (r *elapsedLog) Warn(context.Context, string, ...interface{})  {}
func (r *elapsedLog) Error(context.Context, string, ...interface{}) {}
func (r *elapsedLog) Trace(_ context.Context, begin time.Time, fc func() (string, int64), _ error) {
	took := time.Since(begin) // what gorm's own logger compares with SlowThreshold
	sql, _ := fc()
	r.mu.Lock()
	r.sql, r.took = append(r.sql, sql), append(r.took, took)
	r.mu.Unlock()
}

// lines returns the recorded statements containing fragment, and their times.
func (r *elapsedLog) lines(fragment string) ([]string, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sqls []string
	var took []time.Duration
	for i, s := range r.sql {
		if strings.Contains(s, fragment) {
			sqls, took = append(sqls, s), append(took, r.took[i])
		}
	}
	return sqls, took
}

// Hooked has an AfterFind hook that runs a statement of its own, after auto-fill.
type Hooked struct {
	ID    uint
	Name  string
	Likes int64 `gorm:"-" slotted:"likes"`
}

func (h *Hooked) AfterFind(tx *gorm.DB) error {
	var n int64
	return tx.Session(&gorm.Session{NewDB: true}).Table("hookeds").Where("id = ?", h.ID).Count(&n).Error
}

// TestFillIsNotTheParentsTime: gorm logs a statement with the time since it
// began, and auto-fill runs inside its callbacks, so a slow fill used to make
// the records' SELECT look slow (gorm's SLOW SQL lines blamed a primary-key
// lookup). The parent's logged time now leaves the fill out; the fill's
// statements keep their own lines and times, and a statement an AfterFind
// hook runs after the fill is logged as it ran.
func TestFillIsNotTheParentsTime(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&Hooked{}))
		require.NoError(t, db.AutoMigrate(&Hooked{}))
		recs := []Hooked{{Name: "a"}, {Name: "b"}, {Name: "c"}}
		require.NoError(t, db.Create(&recs).Error)
		for i := range recs {
			require.NoError(t, slotted.Add(db, &recs[i], "likes", int64(i+1)))
		}
		// The fill's read made slow, and only it: the counter table's statements sleep.
		slow := func(tx *gorm.DB) {
			if tx.Statement.Table == slotted.DefaultTable {
				time.Sleep(100 * time.Millisecond)
			}
		}
		require.NoError(t, db.Callback().Row().Before("gorm:row").Register("test:slow_fill", slow))
		require.NoError(t, db.Callback().Query().Before("gorm:query").Register("test:slow_fill", slow))

		rec := &elapsedLog{}
		var got []Hooked
		require.NoError(t, db.Session(&gorm.Session{Logger: rec}).Order("id").Find(&got).Error)
		require.Len(t, got, 3)
		require.EqualValues(t, 3, got[2].Likes, "filled")

		parent, parentTook := rec.lines(`FROM "hookeds" ORDER BY`)
		if len(parent) == 0 {
			parent, parentTook = rec.lines("FROM `hookeds` ORDER BY")
		}
		require.Len(t, parent, 1, "the records' SELECT: %q", rec.sql)
		fill, fillTook := rec.lines(slotted.DefaultTable)
		require.NotEmpty(t, fill, "the fill has lines of its own: %q", rec.sql)
		require.Less(t, parentTook[0], fillTook[0], "the parent's time includes the fill's")
		hooks, hookTook := rec.lines("count(*)")
		require.Len(t, hooks, 3, "the AfterFind statements: %q", rec.sql)
		for _, d := range hookTook {
			require.GreaterOrEqual(t, d, time.Duration(0), "a statement after the fill keeps its own start")
		}

		// gorm's own logger still names the caller's line, not the plugin's, for the records' SELECT.
		var out strings.Builder
		gl := logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
		require.NoError(t, db.Session(&gorm.Session{Logger: gl}).Where("name <> ?", "").Find(&got).Error)
		lines := strings.Split(out.String(), "\n")
		at := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "WHERE name <> ") })
		require.Positive(t, at, out.String())
		require.Contains(t, lines[at-1], "fill_log_test.go:", "the caller's line: %q", out.String())

		// Again through Logger.Trace's own clients: a second Find on the same session is elapsedLog alike.
		require.NoError(t, db.Session(&gorm.Session{Logger: rec}).Where("id > ?", 0).Find(&got).Error)
		_, parentTook = rec.lines("WHERE id > 0")
		require.Len(t, parentTook, 1)
		_, fillTook = rec.lines(slotted.DefaultTable)
		require.Less(t, parentTook[0], fillTook[len(fillTook)-1])
	})
}
