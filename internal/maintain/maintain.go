// Package maintain holds the maintenance passes' statements: folding a
// counter's slot rows into one (Compact, Reset), finding crowded counters
// (CompactAll), deleting a bucket's rows, pruning expired once keys, and
// finding counters whose record is gone (Sweep). Every read here decides a
// write or a delete, so it runs on the primary, and every rewrite locks what
// it reads in key order. The root's maintenance calls page with
// internal/keyset and report progress.
package maintain

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/keyset"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/tables"
)

// Config is the part of slotted.Config maintenance reads.
type Config struct {
	Table, OnceTable string
}

// Maintainer runs the maintenance statements; one per Plugin.
type Maintainer struct {
	cfg      Config
	dialect  dialect.Dialect
	sessions *session.Sessions
}

// New returns the maintainer of one Plugin.
func New(cfg Config, d dialect.Dialect, s *session.Sessions) *Maintainer {
	return &Maintainer{cfg: cfg, dialect: d, sessions: s}
}

// Compact folds the slot rows of each counter in refs into one row holding
// their sum; counters with at most one row are left alone, and so are
// counters whose total does not fit in int64 (their rows stay as they are).
// It returns how many rows it removed.
func (p *Maintainer) Compact(db *gorm.DB, refs []meta.Ref) (removed int64, err error) {
	return p.CompactRefs(db, refs, false)
}

// CompactRefs is compact; strict refuses the whole call with errs.ErrOverflow,
// writing nothing, when a counter's total does not fit in int64 (Compact and
// CompactRef, which name one counter, report it rather than skip it).
func (p *Maintainer) CompactRefs(db *gorm.DB, refs []meta.Ref, strict bool) (removed int64, err error) {
	refs = slices.Clone(refs)
	slices.SortFunc(refs, meta.CompareRefs) // lock in key order, as every writer of these rows does
	err = p.sessions.WriteTx(db, func(tx *gorm.DB) error {
		rows, err := tables.LockRows(tx, p.cfg.Table, p.dialect, refs)
		if err != nil {
			return err
		}
		drop, keep, overflows := planCompaction(rows)
		if strict && overflows > 0 {
			return fmt.Errorf("%w: the slot rows of the counter total more than int64 holds; Reset it", errs.ErrOverflow)
		}
		removed, err = tables.ReplaceRows(tx, p.cfg.Table, drop, keep)
		return err
	})
	return removed, err
}

// Reset replaces the slot rows of one counter by a single row holding value
// (none when value is 0).
func (p *Maintainer) Reset(db *gorm.DB, ref meta.Ref, value int64) error {
	return p.sessions.WriteTx(db, func(tx *gorm.DB) error {
		rows, err := tables.LockRows(tx, p.cfg.Table, p.dialect, []meta.Ref{ref})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return tables.SeedRow(tx, p.cfg.Table, ref, value)
		}
		drop, keep := planReset(rows, value)
		_, err = tables.ReplaceRows(tx, p.cfg.Table, drop, keep)
		return err
	})
}

// planCompaction folds each counter's locked rows (sorted by key) into one
// row at its lowest slot holding their sum; a counter with one row is left
// alone, one that sums to 0 gets no row. drop is in key order. A counter
// whose sum does not fit in int64 is left alone too, and counted in overflows.
func planCompaction(rows []tables.Counter) (drop, keep []tables.Counter, overflows int) {
	for group := range tables.Runs(rows, tables.SameCounter) {
		if len(group) < 2 {
			continue
		}
		sum, ok := tables.SumExact(group)
		if !ok {
			overflows++
			continue
		}
		row := group[0]
		row.Count = sum
		drop = append(drop, group...)
		if row.Count != 0 {
			keep = append(keep, row)
		}
	}
	return drop, keep, overflows
}

// planReset replaces one counter's locked rows by one row at its lowest slot
// holding value (none when value is 0).
func planReset(rows []tables.Counter, value int64) (drop, keep []tables.Counter) {
	if value != 0 {
		row := rows[0]
		row.Count = value
		keep = []tables.Counter{row}
	}
	return rows, keep
}

// Crowded returns up to limit counters after `after` with more than minRows rows.
func (p *Maintainer) Crowded(db *gorm.DB, recordType string, after meta.Ref, minRows, limit int) ([]meta.Ref, error) {
	rt, rid := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}
	q := session.Primary(db, p.cfg.Table).Table(p.cfg.Table).Select("?, ?", rt, rid) // it decides what is rewritten
	switch {
	case recordType != "" && after.Type > recordType:
		return nil, nil // resumed past this record_type
	case recordType != "":
		q = q.Where(clause.Eq{Column: rt, Value: recordType})
		if after.Type == recordType {
			q = q.Where(clause.Gt{Column: rid, Value: after.ID})
		}
	case after != meta.Ref{}:
		// A row comparison is one index condition on PostgreSQL, so the scan
		// streams from the resume point instead of aggregating the whole rest.
		q = q.Where(keyset.After([]clause.Column{rt, rid}, []any{after.Type, after.ID}, p.dialect.RowCompare))
	}
	var refs []meta.Ref
	rows, err := q.Group("record_type").Group("record_id").Having("COUNT(*) > ?", minRows).
		Order(keyset.Order([]clause.Column{rt, rid})).Limit(limit).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r meta.Ref
		if err := rows.Scan(&r.Type, &r.ID); err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	return refs, rows.Err()
}

// DeleteBucket deletes every slot row of one record_type, batch rows per
// DELETE, walking them in key order. A row written behind the walk (a write
// into an expired bucket, which only a clock far behind would make) is left
// for the next run.
func (p *Maintainer) DeleteBucket(ctx context.Context, db *gorm.DB, recordType string, batch int) (int64, error) {
	rt, key := clause.Column{Name: "record_type"}, []clause.Column{{Name: "record_id"}, {Name: "slot"}}
	var removed int64
	read := func(after []any) ([]tables.Counter, int, []any, error) {
		q := session.Primary(db, p.cfg.Table).Table(p.cfg.Table).Select("record_id", "slot").Where(clause.Eq{Column: rt, Value: recordType})
		if after != nil {
			q = q.Where(keyset.After(key, after, false))
		}
		var rows []tables.Counter
		if err := q.Order(keyset.Order(key)).Limit(batch).Find(&rows).Error; err != nil || len(rows) == 0 {
			return nil, 0, nil, err
		}
		last := rows[len(rows)-1]
		return rows, len(rows), []any{string(last.RecordID), last.Slot}, nil
	}
	err := keyset.Walk(ctx, batch, nil, read, func(rows []tables.Counter, _ []any) error {
		for i := range rows {
			rows[i].RecordType = tables.Key(recordType)
		}
		// Deleting named rows is idempotent: retried on lock conflicts like a write.
		return p.sessions.Retry.Do(ctx, session.InTx(db), func(ctx context.Context) error {
			res := session.Primary(db, p.cfg.Table).WithContext(ctx).Table(p.cfg.Table).Where(tables.SlotsCondition(rows)).Delete(&tables.Counter{})
			removed += res.RowsAffected
			return res.Error
		})
	})
	return removed, err
}

// pruneBatch bounds the keys one DELETE of pruneKeys removes.
const pruneBatch = 1000

// PruneKeys deletes the once keys that expired before now, a batch at a
// time, and returns how many it deleted. Each batch is read on the primary
// (the read decides a delete) in expiry order and deleted by primary key in
// its own statement, retried on lock conflicts; the DELETE checks the expiry
// again, so a key that AddOnce replaced meanwhile (expired keys count as
// absent) keeps its new row. A portable batch needs the two steps: MySQL has
// no LIMIT in a subquery of the table being deleted from, PostgreSQL no
// DELETE ... LIMIT.
//
//	SELECT `record_type`,`record_id`,`op_key` FROM `slotted_once` WHERE `expires_at` <= '2026-...' ORDER BY `expires_at` LIMIT 1000
//	DELETE FROM `slotted_once` WHERE `expires_at` <= '2026-...' AND ((`record_type` = 'posts.views' AND `record_id` = '42' AND `op_key` IN ('r1','r2')) OR ...)
func (p *Maintainer) PruneKeys(ctx context.Context, db *gorm.DB, now time.Time) (pruned int64, err error) {
	now = now.UTC()
	expired := clause.Lte{Column: clause.Column{Name: "expires_at"}, Value: now}
	// The walk's cursor is the delete itself: each page is read from the
	// start of what is still expired, so the key to resume after is unused.
	read := func([]any) ([]tables.Once, int, []any, error) {
		var keys []tables.Once
		err := session.Primary(db, p.cfg.OnceTable).Table(p.cfg.OnceTable).Select("record_type", "record_id", "op_key").
			Where(expired).Order(clause.OrderByColumn{Column: clause.Column{Name: "expires_at"}}).Limit(pruneBatch).Find(&keys).Error
		return keys, len(keys), nil, err
	}
	err = keyset.Walk(ctx, pruneBatch, nil, read, func(keys []tables.Once, _ []any) error {
		slices.SortFunc(keys, compareOnce) // delete in key order, as one transaction locks its keys
		return p.sessions.Retry.Do(ctx, session.InTx(db), func(ctx context.Context) error {
			res := session.Primary(db, p.cfg.OnceTable).WithContext(ctx).Table(p.cfg.OnceTable).Where(expired).Where(keysCondition(keys)).Delete(&tables.Once{})
			pruned += res.RowsAffected
			return res.Error
		})
	})
	return pruned, err
}

func compareOnce(a, b tables.Once) int {
	return cmp.Or(cmp.Compare(a.RecordType, b.RecordType), cmp.Compare(a.RecordID, b.RecordID), cmp.Compare(a.OpKey, b.OpKey))
}

// keysCondition selects exactly the given keys (sorted), as
// record_type = ? AND record_id = ? AND op_key IN (...) per counter.
func keysCondition(keys []tables.Once) clause.Expression {
	rt, rid, key := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}, clause.Column{Name: "op_key"}
	var or []clause.Expression
	for group := range tables.Runs(keys, func(a, b tables.Once) bool { return a.RecordType == b.RecordType && a.RecordID == b.RecordID }) {
		ks := make([]any, len(group))
		for i, k := range group {
			ks[i] = string(k.OpKey)
		}
		or = append(or, clause.And(clause.Eq{Column: rt, Value: string(group[0].RecordType)},
			clause.Eq{Column: rid, Value: string(group[0].RecordID)}, clause.IN{Column: key, Values: ks}))
	}
	return clause.Or(or...)
}

// Orphans returns the ids among ids that have no row in the model's table;
// db is a session on the primary.
func (p *Maintainer) Orphans(db *gorm.DB, m *meta.Model, ids []string) ([]string, error) {
	keys := make([]any, 0, len(ids))
	for _, id := range ids {
		if k, ok := m.Key.Parse(id); ok {
			keys = append(keys, k)
		}
	}
	found := reflect.New(reflect.SliceOf(m.Type))
	if len(keys) > 0 {
		// Unscoped: a soft-deleted record still owns its counters.
		err := session.WithoutFill(db).Unscoped().Model(reflect.New(m.Type).Interface()).Select(m.Key.Columns()).
			Where(m.Key.In("", keys)).Find(found.Interface()).Error
		if err != nil {
			return nil, err
		}
	}
	exists, _ := m.Records(found.Elem(), false)
	var out []string
	for _, id := range ids {
		if _, ok := exists.ByID[id]; !ok {
			out = append(out, id)
		}
	}
	return out, nil
}
