package callbacks

// This file is not generated. Its name ends in .gen.go because gorm's logger
// (utils.FileWithLineNum, utils.CallerFrame) skips the frames of such files,
// as it skips gorm's own, when it looks for the line of the caller's code:
// the logger below sits between gorm and the caller's logger on one
// statement's trace, and must not be blamed for the caller's Find.

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// fillTimed is the logger of a query whose records auto-fill filled, from
// the fill's end until gorm traces the query. gorm logs a statement with the
// time since it began, after every callback, so the fill's statements, which
// run in the query's callbacks and have log lines of their own, would count
// twice and make a primary-key lookup look slow (gorm's SLOW SQL). It moves
// the query's start by the fill's time and gives the statement its own
// logger back. A statement that began after the fill did (an AfterFind hook's,
// on a session that copied this logger) is traced as it is.
type fillTimed struct {
	logger.Interface // the statement's own logger
	db               *gorm.DB
	orig             *gorm.Config
	start            time.Time // when the fill began
	took             time.Duration
}

func (l *fillTimed) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if begin.Before(l.start) { // the filled query: its fc reads db.Logger, its own again
		l.db.Config = l.orig
		begin = begin.Add(l.took)
	}
	l.Interface.Trace(ctx, begin, fc, err)
}

// ParamsFilter keeps the statement's logger's, for the sessions that copied this one.
func (l *fillTimed) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := l.Interface.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, params
}

// leaveOutFill gives db's statement a logger that leaves the fill, begun at
// start, out of its time. db's Config is shared with every session of the
// caller's: the statement gets a copy, as gorm.Session makes one.
func leaveOutFill(db *gorm.DB, start time.Time) {
	orig := db.Config
	if orig.Logger == nil {
		return
	}
	cfg := *orig
	cfg.Logger = &fillTimed{Interface: orig.Logger, db: db, orig: orig, start: start, took: time.Since(start)}
	db.Config = &cfg
}
