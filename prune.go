package slotted

import (
	"cmp"
	"context"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/keyset"

	"github.com/slotted-go/slotted/internal/tables"
)

// pruneBatch bounds the keys one DELETE of pruneKeys removes.
const pruneBatch = 1000

// pruneKeys deletes the once keys that expired before now, a batch at a
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
func (p *Plugin) pruneKeys(ctx context.Context, db *gorm.DB, now time.Time) (pruned int64, err error) {
	now = now.UTC()
	expired := clause.Lte{Column: clause.Column{Name: "expires_at"}, Value: now}
	// The walk's cursor is the delete itself: each page is read from the
	// start of what is still expired, so the key to resume after is unused.
	read := func([]any) ([]onceRow, int, []any, error) {
		var keys []onceRow
		err := session.Primary(db, p.cfg.OnceTable).Table(p.cfg.OnceTable).Select("record_type", "record_id", "op_key").
			Where(expired).Order(clause.OrderByColumn{Column: clause.Column{Name: "expires_at"}}).Limit(pruneBatch).Find(&keys).Error
		return keys, len(keys), nil, err
	}
	err = keyset.Walk(ctx, pruneBatch, nil, read, func(keys []onceRow, _ []any) error {
		slices.SortFunc(keys, compareOnce) // delete in key order, as one transaction locks its keys
		return p.sessions.Retry.Do(ctx, session.InTx(db), func(ctx context.Context) error {
			res := session.Primary(db, p.cfg.OnceTable).WithContext(ctx).Table(p.cfg.OnceTable).Where(expired).Where(keysCondition(keys)).Delete(&onceRow{})
			pruned += res.RowsAffected
			return res.Error
		})
	})
	return pruned, err
}

func compareOnce(a, b onceRow) int {
	return cmp.Or(cmp.Compare(a.RecordType, b.RecordType), cmp.Compare(a.RecordID, b.RecordID), cmp.Compare(a.OpKey, b.OpKey))
}

// keysCondition selects exactly the given keys (sorted), as
// record_type = ? AND record_id = ? AND op_key IN (...) per counter.
func keysCondition(keys []onceRow) clause.Expression {
	rt, rid, key := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}, clause.Column{Name: "op_key"}
	var or []clause.Expression
	for group := range tables.Runs(keys, func(a, b onceRow) bool { return a.RecordType == b.RecordType && a.RecordID == b.RecordID }) {
		ks := make([]any, len(group))
		for i, k := range group {
			ks[i] = string(k.OpKey)
		}
		or = append(or, clause.And(clause.Eq{Column: rt, Value: string(group[0].RecordType)},
			clause.Eq{Column: rid, Value: string(group[0].RecordID)}, clause.IN{Column: key, Values: ks}))
	}
	return clause.Or(or...)
}
