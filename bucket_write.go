package slotted

import (
	"context"
	"fmt"
	"math/rand/v2"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// A write to a bucketed counter is one statement with two rows, the
// all-time total's slot and the current bucket's slot (the same slot number),
// rendered once per *gorm.DB by gorm like the plain upsert:
//
//	INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`)
//	VALUES ('posts.views','42',17,1),('posts.views@2026-11-23','42',17,1)
//	ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 1
//
// Both rows add the same delta, so the update needs no VALUES()/excluded
// reference and keeps the plain upsert's portable form. The rows are in key
// order (a record_type sorts before itself followed by '@...'), the order
// compaction locks them in, so the statement cannot deadlock with it.
// One round trip; atomic, so the total always equals the sum of the buckets
// written (until retention deletes old buckets).

// markBucket stands for the bucket's record_type while rendering.
const markBucket = Key("\x00slotted:bucket")

// argBucketType is the placeholder of the bucket's record_type.
const argBucketType arg = 100

// renderBucketed renders the two-row upsert.
func renderBucketed(db *gorm.DB, table string, d dialect) (statements, error) {
	var s statements
	tx := db.Session(&gorm.Session{NewDB: true, DryRun: true, SkipDefaultTransaction: true, SkipHooks: true, Logger: logger.Discard}).Table(table)
	rows := []SlottedCounter{
		{RecordType: markType, RecordID: markID, Slot: markSlot, Count: markDelta},
		{RecordType: markBucket, RecordID: markID, Slot: markSlot, Count: markDelta},
	}
	up := tx.Clauses(addClause(d, markDelta)).Create(&rows)
	if up.Error != nil {
		return s, fmt.Errorf("slotted: rendering bucketed upsert: %w", up.Error)
	}
	s.upsert = up.Statement.SQL.String()
	s.upsertArgs = make([]arg, len(up.Statement.Vars))
	for i, v := range up.Statement.Vars {
		if v == markBucket {
			s.upsertArgs[i] = argBucketType
			continue
		}
		order, err := argOrder([]any{v})
		if err != nil {
			return s, err
		}
		s.upsertArgs[i] = order[0]
	}
	return s, nil
}

// writeCounter adds delta to counter c of record id: the hot path's entry for
// model counters, bucketed or not.
func (p *Plugin) writeCounter(db *gorm.DB, c *counter, id string, delta int64) error {
	if c.bucket == nil {
		return p.add(db, c.recordType, id, c.slots, delta)
	}
	if delta == 0 {
		return nil
	}
	bucketType := bucketType(c.recordType, c.bucket.of(p.cfg.Now()).label)
	pool, inTx := p.pool(db)
	ctx := contextOf(db)
	return p.withRetry(ctx, inTx, func(ctx context.Context) error {
		vals := appendArgs(make([]any, 0, len(p.bucketSQL.upsertArgs)), p.bucketSQL.upsertArgs, c.recordType, id, rand.IntN(c.slots), delta, bucketType)
		return overflowed(execRendered(db, pool, ctx, p.bucketSQL.upsert, vals).Error)
	})
}

// unbucketed refuses a bucketed counter in the writes that know only a
// counter's total row (bulk writes, AddOnce, Buffer): they would count the
// total but not the bucket.
func (c *counter) unbucketed(what string) error {
	if c.bucket != nil {
		return fmt.Errorf("%w: %s of the bucketed counter %q: use Add, which writes the total and the bucket", ErrInvalidArgument, what, c.name)
	}
	return nil
}
