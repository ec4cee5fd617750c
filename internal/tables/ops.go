package tables

import (
	"iter"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/meta"
)

// The counter table's row operations that rewrite counters in place:
// Compact and Reset, Fix, and the counter caches' repairs. The caller holds
// the transaction; every read that decides a write here locks what it reads.

// KeyColumns are the counter table's primary key, the upserts' conflict target.
func KeyColumns() []clause.Column {
	return []clause.Column{{Name: "record_type"}, {Name: "record_id"}, {Name: "slot"}}
}

// SetClause overwrites the existing row's count with value (Reset's seed row).
func SetClause(value int64) clause.OnConflict {
	return clause.OnConflict{Columns: KeyColumns(), DoUpdates: clause.Set{{Column: clause.Column{Name: "count"}, Value: value}}}
}

// RefsCondition selects the rows of the given counters (sorted). It is
// written as record_type = ? AND record_id IN (...) per record type, because
// PostgreSQL plans a row-value IN list as a scan of the whole record type with
// an OR filter per row.
func RefsCondition(refs []meta.Ref) clause.Expression {
	rt, rid := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}
	var or []clause.Expression
	for group := range Runs(refs, func(a, b meta.Ref) bool { return a.Type == b.Type }) {
		ids := make([]any, len(group))
		for i, r := range group {
			ids[i] = r.ID
		}
		or = append(or, clause.And(clause.Eq{Column: rt, Value: group[0].Type}, clause.IN{Column: rid, Values: ids}))
	}
	return clause.Or(or...)
}

// SlotsCondition selects exactly the given rows (sorted by key), as
// record_type = ? AND record_id = ? AND slot IN (...) per counter.
func SlotsCondition(rows []Counter) clause.Expression {
	rt, rid, slot := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}, clause.Column{Name: "slot"}
	var or []clause.Expression
	for group := range Runs(rows, SameCounter) {
		slots := make([]any, len(group))
		for i, r := range group {
			slots[i] = r.Slot
		}
		or = append(or, clause.And(clause.Eq{Column: rt, Value: string(group[0].RecordType)},
			clause.Eq{Column: rid, Value: string(group[0].RecordID)}, clause.IN{Column: slot, Values: slots}))
	}
	return clause.Or(or...)
}

// SameCounter reports whether two slot rows belong to one counter.
func SameCounter(a, b Counter) bool {
	return a.RecordType == b.RecordType && a.RecordID == b.RecordID
}

// Runs yields the runs of consecutive elements of xs that same puts together
// (rows sorted by key, grouped by counter).
func Runs[T any](xs []T, same func(a, b T) bool) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for start := 0; start < len(xs); {
			end := start + 1
			for end < len(xs) && same(xs[start], xs[end]) {
				end++
			}
			if !yield(xs[start:end]) {
				return
			}
			start = end
		}
	}
}

// LockRows reads the slot rows of the counters in refs (sorted), locking them
// in key order.
func LockRows(tx *gorm.DB, table string, d dialect.Dialect, refs []meta.Ref) ([]Counter, error) {
	var rows []Counter
	q := tx.Table(table).Select("record_type", "record_id", "slot", "count").Where(RefsCondition(refs)).
		Order(clause.OrderBy{Columns: []clause.OrderByColumn{{Column: clause.Column{Name: "record_type"}}, {Column: clause.Column{Name: "record_id"}}, {Column: clause.Column{Name: "slot"}}}})
	if d.LockingReads { // SQLite's BEGIN IMMEDIATE already holds the database's write lock
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	return rows, q.Find(&rows).Error
}

// RewriteChunk bounds the tuples of one DELETE (3 bind values each).
const RewriteChunk = 1000

// LoadChunk bounds the records one read names (Load, auto-fill, the
// counter caches' reads): IN lists stay well under every database's limit on
// bind values.
const LoadChunk = 1000

// ReplaceRows deletes exactly the drop rows (locked, sorted by key) and
// inserts keep, returning the net number of rows removed.
func ReplaceRows(tx *gorm.DB, table string, drop, keep []Counter) (removed int64, err error) {
	for chunk := range slices.Chunk(drop, RewriteChunk) {
		res := tx.Table(table).Where(SlotsCondition(chunk)).Delete(&Counter{})
		if res.Error != nil {
			return 0, res.Error
		}
		removed += res.RowsAffected
	}
	if len(keep) > 0 {
		if err := tx.Table(table).CreateInBatches(&keep, 500).Error; err != nil {
			return 0, err
		}
		removed -= int64(len(keep))
	}
	return removed, nil
}

// SeedRow sets a counter that had no rows to value. Nothing was locked for
// it, so a writer may create its slot 0 meanwhile (and another Reset may
// too): set it rather than insert it. An increment overwritten here raced
// the reset and is ordered before it.
func SeedRow(tx *gorm.DB, table string, ref meta.Ref, value int64) error {
	if value == 0 {
		return nil
	}
	row := Counter{RecordType: Key(ref.Type), RecordID: Key(ref.ID), Count: value}
	return tx.Table(table).Clauses(SetClause(value)).Create(&row).Error
}
