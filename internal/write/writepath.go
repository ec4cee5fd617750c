package write

import (
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/bucketing"

	"github.com/slotted-go/slotted/internal/meta"
)

// One write path. Every write becomes row deltas (batchRow): a counter's
// total row and, for a bucketed counter, its bucket's row, whose label is
// fixed when the write is made. rowsOf is the one place that knows what rows
// a counter's write touches; writeDeltas is the one place that runs them:
//
//	outside a transaction  the coalescer (coalesce.go): group commit, rows
//	                       summed per counter, multi-row upserts in key order
//	inside the caller's    the same multi-row upserts on its connection, not
//	transaction            retried (a conflict rolled the transaction back)
//
// A write's rows are atomic: one statement when they fit a shape, else one
// transaction (upsertRows), in or out of a batch of other callers' writes.

// RowsOf appends the rows a write of delta to counter c of record id touches
// at instant at: the total row, and the bucket holding at for a bucketed
// counter.
func RowsOf(dst []Row, c *meta.Counter, id string, delta int64, at time.Time) []Row {
	dst = append(dst, Row{Ref: meta.Ref{Type: c.RecordType, ID: id}, Slots: c.Slots, Delta: delta})
	if c.Bucket != nil {
		dst = append(dst, Row{Ref: meta.Ref{Type: bucketing.Type(c.RecordType, c.Bucket.Of(at).Label), ID: id}, Slots: c.Slots, Delta: delta})
	}
	return dst
}

// WriteDeltas writes rows (each counter at most once; zero deltas allowed)
// all or none, coalesced outside a transaction.
func (p *Engine) WriteDeltas(db *gorm.DB, rows []Row) error {
	rows = DropZero(rows)
	switch len(rows) {
	case 0:
		return nil
	case 1:
		r := rows[0]
		return p.AddOne(db, r.Ref.Type, r.Ref.ID, r.Slots, r.Delta)
	}
	SortRows(rows)
	pool, inTx := p.sessions.Pool(db)
	if c := p.CoalescerFor(db, pool, inTx); c != nil {
		return p.CoalesceRows(db, c, Row{}, rows, nil)
	}
	return p.UpsertRows(db, pool, session.Context(db), inTx, rows)
}

// DropZero removes rows that add nothing, in place.
func DropZero(rows []Row) []Row {
	for i, r := range rows {
		if r.Delta == 0 {
			out := rows[:i]
			for _, r := range rows[i+1:] {
				if r.Delta != 0 {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return rows
}
