package write

import (
	"cmp"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/tables"
)

// AddOnce coalesced. Concurrent AddOnce calls outside a transaction queue in
// the coalescer like any write and share one transaction: their keys go in
// with one statement that returns the keys it inserted, the new keys' deltas
// are summed with the batch's other writes into its multi-row upserts, and
// one COMMIT ends it:
//
//	BEGIN
//	INSERT IGNORE INTO `slotted_once` (...) VALUES (...),(...) RETURNING `record_type`,`record_id`,`op_key`   -- MariaDB 10.5+
//	INSERT INTO "slotted_once" (...) VALUES (...),(...) ON CONFLICT (...) DO NOTHING RETURNING ...           -- PostgreSQL, SQLite 3.35+
//	INSERT INTO `slotted_counters` (...) VALUES (...),(...) ON DUPLICATE KEY UPDATE ...   -- the new keys' rows and the other writes'
//	COMMIT
//
// A key and its delta commit together or not at all, so a retry with the
// same key finds it and adds nothing, whichever batch carried it. Keys go in
// sorted (each once: of two callers with one key in a batch the first queued
// wins and the other gets applied=false), the same order on every batch, so
// two batches do not deadlock on them. A batch that fails fails all of its
// callers and wrote nothing for them; one that would overflow a counter
// writes nothing, and its callers then write alone, each its own outcome.
// Inside the caller's transaction the same statements run on its connection.

// OnceWrite is the key an AddOnce caller's rows are guarded by, and its outcome.
type OnceWrite struct {
	row tables.Once
	// rowsFor, set for RemoveOnce, gives the rows a delta touches: the key is
	// deleted and rowsFor(-its delta) written. nil for AddOnce.
	rowsFor func(delta int64) []Row
	applied bool // set by the batch that wrote it (RemoveOnce: row.Delta too), read by the caller after the batch's outcome
}

// onceKeyOf is the key's identity.
func onceKeyOf(r *tables.Once) [3]tables.Key { return [3]tables.Key{r.RecordType, r.RecordID, r.OpKey} }

// byOnceKey indexes a batch's once callers by their key.
func byOnceKey(ws []*waiter) map[[3]tables.Key]*waiter {
	index := make(map[[3]tables.Key]*waiter, len(ws))
	for _, o := range ws {
		index[onceKeyOf(&o.once.row)] = o
	}
	return index
}

// onceRowCondition selects r's key in the once table.
func onceRowCondition(r *tables.Once) clause.Expression {
	return onceCondition(meta.Ref{Type: string(r.RecordType), ID: string(r.RecordID)}, string(r.OpKey))
}

func compareOnceKeys(a, b *waiter) int {
	return cmp.Or(cmp.Compare(a.once.row.RecordType, b.once.row.RecordType),
		cmp.Compare(a.once.row.RecordID, b.once.row.RecordID), cmp.Compare(a.once.row.OpKey, b.once.row.OpKey))
}

// ApplyOnces writes, in tx, rows (other callers' row deltas, already summed
// per counter) and the rows of every AddOnce caller in onces whose key is new
// (or expired), marking those applied. Everything it writes is computed from
// what it reads in tx, so a retried transaction starts over.
func (p *Engine) ApplyOnces(tx *gorm.DB, rows []Row, onces []*waiter) error {
	var adds, removes []*waiter
	for _, o := range onces {
		o.once.applied = false
		if o.once.rowsFor != nil {
			removes = append(removes, o)
		} else {
			adds = append(adds, o)
		}
	}
	keys := slices.Clone(adds)
	slices.SortStableFunc(keys, compareOnceKeys) // stable: the first queued of one key is first
	keys = slices.CompactFunc(keys, func(a, b *waiter) bool { return compareOnceKeys(a, b) == 0 })
	if err := p.insertKeys(tx, keys); err != nil {
		return err
	}
	var seen []*waiter // present: maybe expired, whatever this call's options
	for _, o := range keys {
		if !o.once.applied {
			seen = append(seen, o)
		}
	}
	if len(seen) > 0 {
		if err := p.replaceExpired(tx, seen); err != nil {
			return err
		}
	}
	all := slices.Clone(rows)
	for _, o := range keys {
		if o.once.applied {
			all = append(all, o.rows...)
		}
	}
	if len(removes) > 0 {
		slices.SortStableFunc(removes, compareOnceKeys)
		removes = slices.CompactFunc(removes, func(a, b *waiter) bool { return compareOnceKeys(a, b) == 0 })
		if err := p.deleteKeys(tx, removes); err != nil {
			return err
		}
		for _, o := range removes {
			if o.once.applied {
				all = append(all, o.once.rowsFor(-o.once.row.Delta)...)
			}
		}
	}
	all, err := SumRows(all)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return nil
	}
	return p.UpsertRows(tx, tx.Statement.ConnPool, session.Context(tx), true, all)
}

// SumRows sorts rows by key and sums the rows of one counter (errs.ErrOverflow
// when a sum leaves int64: the batch is undone and its callers write alone).
func SumRows(rows []Row) ([]Row, error) {
	rows = DropZero(rows)
	SortRows(rows)
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].Ref == r.Ref {
			sum, ok := MergeDelta(out[n-1].Delta, r.Delta)
			if !ok {
				return nil, errs.ErrOverflow
			}
			out[n-1].Delta, out[n-1].Slots = sum, min(out[n-1].Slots, r.Slots)
			continue
		}
		out = append(out, r)
	}
	return DropZero(out), nil
}

// insertKeys inserts the keys (sorted, distinct) with one statement that
// returns the ones it inserted, and marks their callers applied; a statement
// per key where the server has no RETURNING (returning.go).
func (p *Engine) insertKeys(tx *gorm.DB, keys []*waiter) error {
	if len(keys) == 0 {
		return nil
	}
	if !p.dialect.Returning {
		return p.insertKeysEach(tx, keys)
	}
	var b strings.Builder
	q := func(name string) { tx.Dialector.QuoteTo(&b, name) }
	b.WriteString("INSERT ")
	if p.dialect.InsertIgnore {
		b.WriteString("IGNORE ")
	}
	b.WriteString("INTO ")
	q(p.cfg.OnceTable)
	cols := []string{"record_type", "record_id", "op_key", "delta", "expires_at"}
	b.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		q(c)
	}
	b.WriteString(") VALUES ")
	vals := make([]any, 0, len(keys)*len(cols))
	for i, o := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?)")
		r := &o.once.row
		var at any
		if r.ExpiresAt != nil {
			at = *r.ExpiresAt
		}
		vals = append(vals, string(r.RecordType), string(r.RecordID), string(r.OpKey), r.Delta, at)
	}
	if !p.dialect.InsertIgnore {
		b.WriteString(" ON CONFLICT (")
		for i, c := range cols[:3] {
			if i > 0 {
				b.WriteByte(',')
			}
			q(c)
		}
		b.WriteString(") DO NOTHING")
	}
	b.WriteString(" RETURNING ")
	for i, c := range cols[:3] {
		if i > 0 {
			b.WriteByte(',')
		}
		q(c)
	}
	res, err := tx.Raw(b.String(), vals...).Rows()
	if err != nil {
		return err
	}
	defer res.Close()
	index := byOnceKey(keys)
	for res.Next() {
		var k [3]string
		if err := res.Scan(&k[0], &k[1], &k[2]); err != nil {
			return err
		}
		if o, ok := index[[3]tables.Key{tables.Key(k[0]), tables.Key(k[1]), tables.Key(k[2])}]; ok {
			o.once.applied = true
		}
	}
	return res.Err()
}

// replaceExpired replaces the keys of seen (present, not inserted) that have
// expired: each is deleted and inserted again, its caller applied. Only a
// key read as expired is deleted: a DELETE of a live key would ask InnoDB
// for the X lock that racing duplicates, holding the S lock of their INSERT
// IGNORE, all ask for too (a deadlock).
func (p *Engine) replaceExpired(tx *gorm.DB, seen []*waiter) error {
	now := p.now()
	conds := make([]clause.Expression, len(seen))
	for i, o := range seen {
		conds[i] = onceRowCondition(&o.once.row)
	}
	var expired []tables.Once
	if err := tx.Table(p.cfg.OnceTable).Select("record_type", "record_id", "op_key").Where(clause.Or(conds...)).
		Where(clause.Lte{Column: clause.Column{Name: "expires_at"}, Value: now}).Find(&expired).Error; err != nil || len(expired) == 0 {
		return err
	}
	byKey := byOnceKey(seen)
	var again []*waiter
	for i := range expired {
		o := byKey[onceKeyOf(&expired[i])]
		if o == nil {
			continue
		}
		res := tx.Table(p.cfg.OnceTable).Where(onceRowCondition(&o.once.row)).
			Where(clause.Lte{Column: clause.Column{Name: "expires_at"}, Value: now}).Delete(&tables.Once{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 { // else replaced by another AddOnce meanwhile: now live
			again = append(again, o)
		}
	}
	// The transaction holds the keys' locks since its DELETE: they go in.
	return p.insertKeys(tx, again)
}

// deleteKeys deletes the live keys of removes (sorted, distinct) with one
// statement that returns the ones it deleted and their deltas, and marks
// their callers applied. An expired key is left for PruneKeys, as absent.
//
//	DELETE FROM `slotted_once` WHERE ((`record_type` = ? AND `record_id` = ? AND `op_key` = ?) OR (...))
//	  AND (`expires_at` IS NULL OR `expires_at` > ?) RETURNING `record_type`,`record_id`,`op_key`,`delta`
func (p *Engine) deleteKeys(tx *gorm.DB, removes []*waiter) error {
	if !p.dialect.Returning {
		expires := clause.Column{Name: "expires_at"}
		live := clause.Or(clause.Eq{Column: expires, Value: nil}, clause.Gt{Column: expires, Value: p.now()})
		return p.deleteKeysEach(tx, removes, live)
	}
	var b strings.Builder
	q := func(name string) { tx.Dialector.QuoteTo(&b, name) }
	b.WriteString("DELETE FROM ")
	q(p.cfg.OnceTable)
	b.WriteString(" WHERE (")
	vals := make([]any, 0, len(removes)*3+1)
	for i, o := range removes {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('(')
		for j, c := range []string{"record_type", "record_id", "op_key"} {
			if j > 0 {
				b.WriteString(" AND ")
			}
			q(c)
			b.WriteString(" = ?")
		}
		b.WriteByte(')')
		r := &o.once.row
		vals = append(vals, string(r.RecordType), string(r.RecordID), string(r.OpKey))
	}
	b.WriteString(") AND (")
	q("expires_at")
	b.WriteString(" IS NULL OR ")
	q("expires_at")
	b.WriteString(" > ?) RETURNING ")
	for i, c := range []string{"record_type", "record_id", "op_key", "delta"} {
		if i > 0 {
			b.WriteByte(',')
		}
		q(c)
	}
	vals = append(vals, p.now())
	res, err := tx.Raw(b.String(), vals...).Rows()
	if err != nil {
		return err
	}
	defer res.Close()
	index := byOnceKey(removes)
	for res.Next() {
		var k [3]string
		var delta int64
		if err := res.Scan(&k[0], &k[1], &k[2], &delta); err != nil {
			return err
		}
		if o, ok := index[[3]tables.Key{tables.Key(k[0]), tables.Key(k[1]), tables.Key(k[2])}]; ok {
			o.once.applied, o.once.row.Delta = true, delta
		}
	}
	return res.Err()
}
