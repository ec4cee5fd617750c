package write

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/tables"
)

// A multi-row upsert writes several counters with one statement, each row with
// its own delta:
//
//	INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES (?,?,?,?),(?,?,?,?)
//	ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + VALUES(`count`)      -- MySQL/MariaDB
//	ON CONFLICT ("record_type","record_id","slot") DO UPDATE SET "count"="slotted_counters"."count" + "excluded"."count"
//
// (on SQLite the sum is checked for overflow, see addExpr: one row that would
// overflow fails the statement, and none of its rows is written).
//
// Every statement is prepared once per connection, so the number of distinct
// statements is bounded: a batch has 1..8 rows, or a power of two up to
// MaxBatchRows. A batch that has some other number of rows is never padded (a
// key may not appear twice, and a filler row would lock and create rows): the
// coalescer takes the largest shape that fits and leaves the rest for the next
// statement; bulk writes split into shapes inside one transaction.
const MaxBatchRows = 1024

// ShapeFloor is the largest statement shape of at most n rows (n >= 1).
func ShapeFloor(n int) int {
	if n <= 8 {
		return n
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// shapeIndex numbers the shapes 0..numShapes-1: 1..8 rows, then 16, 32, ... maxBatchRows.
func shapeIndex(rows int) int {
	if rows <= 8 {
		return rows - 1
	}
	return 8 + bits.Len(uint(rows)) - 5
}

// Row is one counter row of a multi-row upsert.
type Row struct {
	Ref   meta.Ref
	Slots int
	Delta int64
}

func compareRows(a, b Row) int { return meta.CompareRefs(a.Ref, b.Ref) }

// batchStatements holds the rendered multi-row upserts, one per shape, rendered
// on first use by gorm's own clause builders like the single-row upsert.
type batchStatements struct {
	shapes [maxShapes]struct {
		once    sync.Once
		sql     string
		rowArgs []Arg // placeholder order within one row, the same for every row
		err     error
		ready   atomic.Bool // sql is rendered: ownStatement may compare with it
	}
}

const maxShapes = 15 // shapeIndex(maxBatchRows) + 1

// batchSQL returns the statement for a shape of rows (shapeFloor(rows) == rows, rows >= 2).
func (p *Engine) batchSQL(rows int) (string, []Arg, error) {
	s := &p.batch.shapes[shapeIndex(rows)]
	s.once.Do(func() {
		s.sql, s.rowArgs, s.err = p.renderBatch(rows)
		s.ready.Store(s.err == nil)
	})
	return s.sql, s.rowArgs, s.err
}

// BatchStatement reports whether query is one of the multi-row upserts
// rendered so far: a statement reaches the driver only after execRows rendered
// its shape.
func (p *Engine) BatchStatement(query string) bool {
	for i := range p.batch.shapes {
		if s := &p.batch.shapes[i]; s.ready.Load() && s.sql == query {
			return true
		}
	}
	return false
}

// ExecRows runs one multi-row upsert (len(rows) is a shape) through gorm's Raw
// callback chain, like add, with a fresh random slot for every row.
func (p *Engine) ExecRows(db *gorm.DB, pool gorm.ConnPool, ctx context.Context, rows []Row) error {
	var (
		query string
		vals  []any
	)
	if len(rows) == 1 {
		r := rows[0]
		query, vals = p.sql.Upsert, Args(p.sql.UpsertArgs, r.Ref.Type, r.Ref.ID, rand.IntN(r.Slots), r.Delta)
	} else {
		var (
			order []Arg
			err   error
		)
		if query, order, err = p.batchSQL(len(rows)); err != nil {
			return err
		}
		vals = make([]any, 0, len(order)*len(rows))
		for _, r := range rows {
			vals = AppendArgs(vals, order, r.Ref.Type, r.Ref.ID, rand.IntN(r.Slots), r.Delta)
		}
	}
	return tables.Overflowed(ExecRendered(db, pool, ctx, query, vals).Error)
}

// SortRows orders rows by key, the order every multi-row statement locks in
// (unsorted multi-row upserts deadlock against each other).
func SortRows(rows []Row) { slices.SortFunc(rows, compareRows) }

// mergeDelta adds d to sum, reporting false instead of overflowing int64.
// ScaleDelta is n*weight, false when it leaves int64 (a counter cache's
// Weight times a child's Sum column).
func ScaleDelta(n, weight int64) (int64, bool) {
	if weight == 1 {
		return n, true
	}
	r := n * weight
	if n != 0 && (r/n != weight || (n == -1 && weight == math.MinInt64) || (weight == -1 && n == math.MinInt64)) {
		return 0, false
	}
	return r, true
}

func MergeDelta(sum, d int64) (int64, bool) {
	s := sum + d
	if (d > 0 && s < sum) || (d < 0 && s > sum) {
		return sum, false
	}
	return s, true
}
