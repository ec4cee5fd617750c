package tests

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// logLines is a logger.Writer keeping every line gorm's own logger prints.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Printf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// TestLogLinesPointAtCaller checks that gorm's default logger, with every
// statement over its slow threshold, names the file that called slotted, not a
// file of slotted's own, for each entry point that runs SQL; error lines too.
func TestLogLinesPointAtCaller(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		out := &logLines{}
		// Every statement takes longer than 1ns: all of them are printed as SLOW SQL.
		db = db.Session(&gorm.Session{Logger: logger.New(out, logger.Config{SlowThreshold: time.Nanosecond, LogLevel: logger.Warn})})
		post := Post{Title: "caller"}
		require.NoError(t, db.Create(&post).Error)
		articles := []Article{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&articles).Error)
		ref := slotted.Ref{Type: "caller", ID: "1"}
		out.take()

		ops := []struct {
			name string
			run  func() error
		}{
			{"Increment", func() error { return slotted.Increment(db, &post, "likes") }},
			{"AddRef", func() error { return slotted.AddRef(db, ref, 2) }},
			{"Count", func() error { _, err := slotted.Count(db, &post, "likes"); return err }},
			{"CountRef", func() error { _, err := slotted.CountRef(db, ref); return err }},
			{"Find with fill", func() error { var ps []Post; return db.Find(&ps).Error }},
			{"Load", func() error { return slotted.Load(db, &post) }},
			{"Compact", func() error { return slotted.Compact(db, &post, "likes") }},
			{"ResetRef", func() error { return slotted.ResetRef(db, ref, 7) }},
			{"CompactAll", func() error { _, err := slotted.CompactAll(db, slotted.CompactOptions{}); return err }},
			{"RollUp", func() error { return slotted.RollUp(db, &articles) }},
			{"RollUpAll", func() error { _, err := slotted.RollUpAll(db, &Article{}, slotted.RollUpOptions{}); return err }},
			{"Sweep", func() error { _, err := slotted.Sweep(db, &Post{}, slotted.SweepOptions{}); return err }},
			{"Delete with cleanup", func() error { return db.Delete(&post).Error }},
		}
		for _, op := range ops {
			require.NoError(t, op.run(), op.name)
			assertCallerLines(t, op.name, out.take(), self, "SLOW SQL", false)
		}

		// gorm's migrator nests deeper than the 13 frames gorm's logger looks
		// at (on MySQL a plain db.AutoMigrate is at the edge too): a line may
		// name no file, but never one of slotted's.
		require.NoError(t, slotted.Migrate(db))
		assertCallerLines(t, "Migrate", out.take(), self, "SLOW SQL", true)

		// A Runner's passes run on its own goroutine, where no frame of the
		// caller exists: the lines name slotted's runner rather than nothing
		// or the Go runtime.
		ctx, cancel := context.WithCancel(context.Background())
		r := slotted.Runner{Compact: &slotted.CompactOptions{}, OnPass: func(slotted.Pass) { cancel() }}
		require.NoError(t, r.Run(ctx, db))
		lines := out.take()
		assert.NotEmpty(t, lines, "Runner logged nothing")
		for _, l := range lines {
			assert.Equal(t, filepath.Dir(filepath.Dir(self)), filepath.Dir(logLocation(l)), "Runner: %q", l)
		}

		// Error lines: a write whose statement fails (the counter table is gone).
		require.NoError(t, db.Migrator().DropTable(slotted.DefaultTable))
		err := slotted.Increment(db, &Post{ID: 1}, "likes")
		require.Error(t, err)
		assert.False(t, errors.Is(err, slotted.ErrNotRegistered))
		assertCallerLines(t, "failing Increment", out.take(), self, "", false)
	})
}

// assertCallerLines checks that op logged statements, and that each log entry
// starts with file:line of the caller's file (or, with orNone, no file).
func assertCallerLines(t *testing.T, op string, lines []string, file, must string, orNone bool) {
	t.Helper()
	if !assert.NotEmpty(t, lines, "%s logged nothing", op) {
		return
	}
	for _, l := range lines {
		first, _, _ := strings.Cut(l, "\n")
		assert.Contains(t, first, must, op)
		if loc := logLocation(l); loc != file && (!orNone || loc != "") {
			assert.Fail(t, "log line not at the caller", "%s: the log line names %q, not %s", op, first, file)
		}
	}
}

// logLocation returns the file a gorm log entry starts with ("" for none).
func logLocation(line string) string {
	loc, _, _ := strings.Cut(line, " ")
	if i := strings.LastIndexByte(loc, ':'); i > 0 {
		return loc[:i]
	}
	return ""
}
