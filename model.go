package slotted

import (
	"github.com/slotted-go/slotted/internal/meta"
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

// Ref names a counter directly by its record_type and record_id, without a
// model: the pattern's original `record_type = 123, record_id = 456` use.
// A model counter's Ref is Type "<table>.<counter>" (or its tag's type:) and
// ID the primary key as decimal text or string; RefOf computes it. Both are
// valid UTF-8 without NUL bytes, 1..MaxKeyLen bytes.
//
// A bucket of a bucketed counter is a Ref too: Type "<record_type>@<label>",
// e.g. "posts.views@2026-11-23" (see the buckets: tag option).
//
// Ref.Slots is how many slot rows AddRef spreads the counter's writes over.
// 0 means Config.Slots. RefOf sets it to the model counter's slots: tag
// option (or Config.Slots), so AddRef(db, ref, 1) with a ref from RefOf
// writes exactly as Add on the model does. Reads and compaction ignore it:
// they take every row the counter has.
type Ref = meta.Ref
