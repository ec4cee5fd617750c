package slotted

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/write"
)

// writeCounter adds delta to counter c of record id: the hot path's entry for
// model counters, bucketed or not. A bucketed counter's write is its total
// row and its current bucket's row (rowsOf), written together:
//
//	INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`)
//	VALUES ('posts.views','42',17,1),('posts.views@2026-11-23','42',5,1)
//	ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + VALUES(`count`)
//
// coalesced with other writes outside a transaction like any other. The rows
// are in key order (a record_type sorts before itself followed by '@...'),
// the order compaction locks them in. The bucket is read from Config.Now
// once, here: a retried write stays in its bucket.
func (p *Plugin) writeCounter(db *gorm.DB, c *meta.Counter, id string, delta int64) error {
	if c.Bucket == nil {
		return p.writes.AddOne(db, c.RecordType, id, c.Slots, delta)
	}
	if delta == 0 {
		return nil
	}
	return p.writes.WriteDeltas(db, write.RowsOf(make([]write.Row, 0, 2), c, id, delta, p.cfg.Now()))
}
