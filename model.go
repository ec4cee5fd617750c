package slotted

import (
	"time"

	"github.com/slotted-go/slotted/internal/tables"
)

// SlottedCounter is one slot row. A counter is the set of rows sharing
// (RecordType, RecordID); its value is the sum of their Count.
//
// The primary key is (record_type, record_id, slot), in that order, so a read
// of one counter is a primary-key range scan. There is deliberately no id
// column: every upsert would burn an AUTO_INCREMENT or sequence value even when
// it updates, and a second unique index makes ON DUPLICATE KEY UPDATE
// deadlock-prone on InnoDB. Its TableName is DefaultTable: with Config.Table
// set, query the rows with slotted.Table(db) rather than
// db.Model(&SlottedCounter{}).
type SlottedCounter = tables.Counter

// Key is a string compared byte for byte. On MySQL/MariaDB it is stored as
// VARBINARY: the default collations there are case-insensitive and ignore
// trailing spaces, which would merge the counters of records "abc", "ABC" and
// "abc ". PostgreSQL and SQLite compare varchar/text exactly already.
type Key = tables.Key

// Bucket is one bucket of a Series: the count of the writes made in [Start, End).
type Bucket struct {
	Start, End time.Time // in the counter's time zone
	Count      int64
}
