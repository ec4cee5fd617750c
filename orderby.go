package slotted

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/query"
)

// Ordering and filtering a model's query by a counter: the scopes join the
// counter's totals, grouped per record, to the model's table,
//
//	SELECT `posts`.`id`,`posts`.`title` FROM `posts`
//	LEFT JOIN (SELECT `record_id` AS slotted_id, SUM(`count`) AS slotted_total FROM `slotted_counters`
//	           WHERE `record_type` = 'posts.likes' GROUP BY `record_id`) `slotted_likes`
//	  ON `slotted_likes`.`slotted_id` = CAST(`posts`.`id` AS CHAR)
//	ORDER BY COALESCE(`slotted_likes`.`slotted_total`, 0) DESC LIMIT 10
//
// so the query stays the caller's: Where, Limit/Offset, Preload, Count,
// soft deletes and auto-fill work as without it. Records without counter rows
// count as 0. record_id is text, so the parent's key is cast to text (on
// PostgreSQL a text never equals an integer, and casting record_id instead
// would forbid using its index); string keys are compared as they are.
//
// Cost: the database sums the counter's every slot row (all records) before
// sorting, one pass over the rows of one record_type in key order; see
// BENCHMARKS.md. A counter with a cache: column sorts faster by that column
// (db.Order("likes_count DESC")), as Top does. So these scopes are the exact
// path; List chooses between exact and fast and pages by cursor (listing.go).

// OrderBy returns a scope that sorts model's records by a counter's total,
// direction "ASC" or "DESC" (any case). Any other direction is rejected with
// ErrInvalidArgument when the query runs, and nothing is sent. Add the
// primary key as a tiebreaker for stable pages:
//
//	db.Scopes(slotted.OrderBy(&Post{}, "likes", "DESC")).Order("id").Limit(10).Offset(20).Find(&posts)
//
// For a bucketed counter this is the all-time total; OrderByBetween sorts by
// a window's.
func OrderBy(model any, counter, direction string) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB { return orderByTotal(db, model, counter, direction, nil) }
}

// OrderByBetween is OrderBy by a bucketed counter's total over the buckets
// overlapping [from, to) ("trending this week"), as CountBetween reads them:
//
//	db.Scopes(slotted.OrderByBetween(&Post{}, "views", "DESC", weekAgo, now)).Limit(10).Find(&posts)
//	// ... LEFT JOIN (SELECT ... WHERE `record_type` IN ('posts.views@2026-11-17',...) GROUP BY `record_id`) `slotted_views_window` ...
func OrderByBetween(model any, counter, direction string, from, to time.Time) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB { return orderByTotal(db, model, counter, direction, &span{from, to}) }
}

// WhereCounter returns a scope that keeps model's records whose counter total
// compares to value with op: one of =, <>, !=, <, <=, >, >=. Records without
// counter rows count as 0. It shares OrderBy's join when both are used:
//
//	db.Scopes(slotted.WhereCounter(&Post{}, "likes", ">=", 100), slotted.OrderBy(&Post{}, "likes", "DESC")).Find(&popular)
//	// ... WHERE COALESCE(`slotted_likes`.`slotted_total`, 0) >= 100 ORDER BY COALESCE(`slotted_likes`.`slotted_total`, 0) DESC
func WhereCounter(model any, counter, op string, value int64) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		switch op {
		case "=", "<>", "!=", "<", "<=", ">", ">=":
		default:
			_ = db.AddError(fmt.Errorf("%w: comparison %s (want =, <>, !=, <, <=, >, >=)", ErrInvalidArgument, errs.Quote(op)))
			return db
		}
		db, total, err := joinTotal(db, model, counter, nil)
		if err != nil {
			_ = db.AddError(err)
			return db
		}
		return db.Where(clause.Expr{SQL: total + " " + op + " ?", Vars: []any{value}})
	}
}

// span is a window of a windowed scope.
type span struct{ from, to time.Time }

func orderByTotal(db *gorm.DB, model any, counter, direction string, w *span) *gorm.DB {
	desc, err := descending(direction)
	if err != nil {
		_ = db.AddError(err)
		return db
	}
	db, total, err := joinTotal(db, model, counter, w)
	if err != nil {
		_ = db.AddError(err)
		return db
	}
	if counting(db) {
		return db // Count: gorm drops ORDER BY before scopes run; a sort would not be grouped
	}
	return sortFirst(db, clause.OrderByColumn{Column: clause.Column{Name: total, Raw: true}, Desc: desc})
}

// sortFirst puts a total's sort key before the query's other ORDER BY
// columns, after the totals sorted by earlier OrderBy scopes. gorm runs
// scopes when the query executes, after every chained Order call, so
// db.Scopes(OrderBy(...)).Order("id") would otherwise sort by id first.
func sortFirst(db *gorm.DB, col clause.OrderByColumn) *gorm.DB {
	var cols []clause.OrderByColumn
	if ob, ok := db.Statement.Clauses["ORDER BY"].Expression.(clause.OrderBy); ok && ob.Expression == nil {
		cols = ob.Columns
	}
	at := 0
	for at < len(cols) && cols[at].Column.Raw && strings.Contains(cols[at].Column.Name, "slotted_total") {
		at++
	}
	out := make([]clause.OrderByColumn, 0, len(cols)+1)
	out = append(append(append(out, cols[:at]...), col), cols[at:]...)
	for i := range out {
		out[i].Reorder = i == 0 // replace the clause rather than append to it
	}
	return db.Order(clause.OrderBy{Columns: out})
}

// counting reports whether the query is gorm's Count.
func counting(db *gorm.DB) bool {
	// Count adds clause.Select{Expression: count(*)}, which merges into the clause as the bare expression.
	e, ok := db.Statement.Clauses["SELECT"].Expression.(clause.Expr)
	return ok && strings.HasPrefix(strings.ToLower(e.SQL), "count(")
}

// descending validates a sort direction: only ASC or DESC, never user text in the SQL.
func descending(direction string) (bool, error) {
	switch strings.ToUpper(strings.TrimSpace(direction)) {
	case "ASC":
		return false, nil
	case "DESC":
		return true, nil
	}
	return false, fmt.Errorf("%w: sort direction %s (want ASC or DESC)", ErrInvalidArgument, errs.Quote(direction))
}

// joinTotal left-joins a counter's totals per record (over a window, when w
// is set) unless the query has that join already, and returns the SQL of the
// total: COALESCE(<alias>.slotted_total, 0).
func joinTotal(db *gorm.DB, model any, counter string, w *span) (*gorm.DB, string, error) {
	p, err := pluginOf(db)
	if err != nil {
		return db, "", err
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return db, "", err
	}
	c, err := m.Counter(counter)
	if err != nil {
		return db, "", err
	}
	if err := m.Key.Textual(); err != nil {
		return db, "", err
	}
	types, alias := []any{c.RecordType}, "slotted_"+identifier(c.Name)
	if w != nil {
		if c.Bucket == nil {
			return db, "", meta.NotBucketed(c)
		}
		buckets, err := c.Bucket.Between(w.from, w.to)
		if err != nil {
			return db, "", err
		}
		types, alias = query.Anys(c.BucketTypes(buckets)), alias+"_window"
	}
	quoted := db.Statement.Quote(alias)
	key, keyVars := m.Key.TextSQL(p.dialect, clause.CurrentTable)
	join := "LEFT JOIN (?) " + quoted + " ON " + quoted + ".slotted_id = " + key
	total := "COALESCE(" + db.Statement.Quote(clause.Column{Table: alias, Name: "slotted_total"}) + ", 0)"
	for _, j := range db.Statement.Joins {
		if j.Name == join {
			return db, total, nil
		}
	}
	sub := p.reads.Totals(db, types)
	return db.Joins(join, append([]any{sub}, keyVars...)...), total, nil
}

// identifier turns a counter name into the lower-case letters, digits and
// '_' of a join alias (PostgreSQL folds unquoted names, and limits them to 63 bytes).
func identifier(name string) string {
	b := []byte(strings.ToLower(name))
	for i, ch := range b {
		if (ch < 'a' || ch > 'z') && (ch < '0' || ch > '9') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}
