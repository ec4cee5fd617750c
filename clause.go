package slotted

import (
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted/internal/dialect"

	"github.com/slotted-go/slotted/internal/write"

	"github.com/slotted-go/slotted/internal/tables"
)

// Marker values: the rendered statement's Vars are matched back to these.
const (
	markType  = Key("\x00slotted:type")
	markID    = Key("\x00slotted:id")
	markSlot  = int32(-1 << 30)
	markDelta = int64(-1 << 40)
)

// questionMarks wraps the dialect so rendered statements keep '?' placeholders:
// db.Exec and db.Raw turn them into the dialect's own ($1, @p1, ...) per call.
type questionMarks struct{ gorm.Dialector }

func (questionMarks) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) { _ = w.WriteByte('?') }

// render builds the plugin's hot statements (write.Statements), once per *gorm.DB, by
// gorm itself, so each dialect's own clause builders decide the syntax. The
// upsert is kept in the dialect's final form ($1 on PostgreSQL) and run through
// gorm's Raw processor without being parsed again; the sum keeps '?' and goes
// through db.Raw. Either way the user's callbacks, logger, tracing, dbresolver
// and TranslateError see them.
//
// MySQL/MariaDB (no VALUES() function, no row alias: runs unchanged on MySQL 8.0.20+, MariaDB, Vitess, TiDB):
//
//	INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES (?,?,?,?)
//	ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + ?
//
// PostgreSQL and SQLite (SQLite checks the sum for overflow, see dialect.AddExpr):
//
//	INSERT INTO "slotted_counters" ("record_type","record_id","slot","count") VALUES (?,?,?,?)
//	ON CONFLICT ("record_type","record_id","slot") DO UPDATE SET "count"="slotted_counters"."count" + ?
func render(db *gorm.DB, table string, d dialect.Dialect) (write.Statements, error) {
	var s write.Statements
	dry := func(questions bool) *gorm.DB {
		tx := db.Session(&gorm.Session{NewDB: true, DryRun: true, SkipDefaultTransaction: true, SkipHooks: true, Logger: logger.Discard})
		if questions {
			tx.Config.Dialector = questionMarks{db.Dialector}
		}
		return tx.Table(table)
	}

	up := dry(false).Clauses(addClause(d, markDelta)).Create(&SlottedCounter{RecordType: markType, RecordID: markID, Slot: markSlot, Count: markDelta})
	if up.Error != nil {
		return s, fmt.Errorf("slotted: rendering upsert: %w", up.Error)
	}
	var total int64
	sum := dry(true).Select("COALESCE(SUM(?), 0)", clause.Column{Name: "count"}).
		Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: markType}).
		Where(clause.Eq{Column: clause.Column{Name: "record_id"}, Value: markID}).
		Find(&total)
	if sum.Error != nil {
		return s, fmt.Errorf("slotted: rendering sum: %w", sum.Error)
	}
	var err error
	s.Upsert = up.Statement.SQL.String()
	if s.UpsertArgs, err = argOrder(up.Statement.Vars); err != nil {
		return s, err
	}
	s.Sum = sum.Statement.SQL.String()
	if s.SumArgs, err = argOrder(sum.Statement.Vars); err != nil {
		return s, err
	}
	return s, nil
}

// addClause adds delta (a bound value, or the inserted row's count in a
// multi-row upsert) to the existing row. The current-table column plus the
// delta is the one form that works on MySQL/MariaDB, PostgreSQL (where a bare
// "count" is ambiguous) and SQLite alike.
func addClause(d dialect.Dialect, delta any) clause.OnConflict {
	return clause.OnConflict{Columns: tables.KeyColumns(), DoUpdates: clause.Set{{Column: clause.Column{Name: "count"}, Value: d.AddExpr(delta)}}}
}

// argOrder maps the rendered statement's Vars back to the values they stand for.
func argOrder(vars []any) ([]write.Arg, error) {
	order := make([]write.Arg, len(vars))
	for i, v := range vars {
		switch v {
		case markType:
			order[i] = write.ArgRecordType
		case markID:
			order[i] = write.ArgRecordID
		case markSlot:
			order[i] = write.ArgSlot
		case markDelta:
			order[i] = write.ArgDelta
		default:
			return nil, fmt.Errorf("slotted: dialect rendered an unexpected bind value %#v", v)
		}
	}
	return order, nil
}

// ownStatement reports whether query is one of the plugin's fixed statements,
// the ones it prepares (the upserts of every shape, so the statement of one
// write and its outcome marker too, and the sum), in the form the driver
// gets. A new fixed statement belongs here too.
func (p *Plugin) ownStatement(query string) bool {
	return query == p.sql.Upsert || query == p.sumSQL() || p.writes.BatchStatement(query)
}

// sumSQL is the sum as db.Raw hands it to the driver ($1 on PostgreSQL),
// rendered on first use, once Initialize has settled p.sql.
func (p *Plugin) sumSQL() string {
	p.sumOnce.Do(func() {
		tx := p.db.Session(&gorm.Session{NewDB: true, DryRun: true, Logger: logger.Discard}).
			Raw(p.sql.Sum, write.Args(p.sql.SumArgs, "", "", 0, 0)...)
		p.sumFinal = tx.Statement.SQL.String()
	})
	return p.sumFinal
}

func (p *Plugin) renderBatch(n int) (string, []write.Arg, error) {
	tx := p.db.Session(&gorm.Session{NewDB: true, DryRun: true, SkipDefaultTransaction: true, SkipHooks: true, Logger: logger.Discard})
	rows := make([]SlottedCounter, n)
	for i := range rows {
		rows[i] = SlottedCounter{RecordType: markType, RecordID: markID, Slot: markSlot, Count: markDelta}
	}
	count := clause.Column{Name: "count"}
	inserted := any(clause.Column{Table: "excluded", Name: "count"})
	if p.dialect.ValuesFunc {
		// The MySQL driver turns only a bare excluded column into VALUES(); inside an expression it must be written out.
		inserted = clause.Expr{SQL: "VALUES(?)", Vars: []any{count}}
	}
	up := tx.Table(p.cfg.Table).Clauses(addClause(p.dialect, inserted)).Create(&rows)
	if up.Error != nil {
		return "", nil, fmt.Errorf("slotted: rendering a %d-row upsert: %w", n, up.Error)
	}
	order, err := argOrder(up.Statement.Vars)
	if err != nil {
		return "", nil, err
	}
	per := len(order) / n
	if per*n != len(order) || per == 0 {
		return "", nil, fmt.Errorf("slotted: a %d-row upsert rendered %d bind values", n, len(order))
	}
	for i := per; i < len(order); i++ {
		if order[i] != order[i-per] {
			return "", nil, fmt.Errorf("slotted: a %d-row upsert binds its rows in different orders", n)
		}
	}
	return up.Statement.SQL.String(), order[:per], nil
}
