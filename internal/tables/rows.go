// Package tables holds the plugin's two tables as gorm models: the counter
// table's slot rows (slotted.SlottedCounter is Counter) and the once table's
// keys (AddOnce), with the key type both use. The root exports the counter
// model under its own names; the mechanisms under internal/ write and read
// through these.
package tables

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/dialect"
)

// Default table names (slotted.DefaultTable, slotted.DefaultOnceTable).
const (
	DefaultTable     = "slotted_counters"
	DefaultOnceTable = "slotted_once"
)

// Counter is one slot row. A counter is the set of rows sharing
// (RecordType, RecordID); its value is the sum of their Count.
//
// The primary key is (record_type, record_id, slot), in that order, so a read
// of one counter is a primary-key range scan. There is deliberately no id
// column: every upsert would burn an AUTO_INCREMENT or sequence value even when
// it updates, and a second unique index makes ON DUPLICATE KEY UPDATE
// deadlock-prone on InnoDB.
type Counter struct {
	RecordType Key   `gorm:"primaryKey;size:128;not null"`
	RecordID   Key   `gorm:"primaryKey;size:128;not null"`
	Slot       int32 `gorm:"primaryKey;autoIncrement:false;not null"`
	Count      int64 `gorm:"not null"`
}

// TableName returns DefaultTable. With Config.Table set, query the rows with
// slotted.Table(db) rather than db.Model(&SlottedCounter{}).
func (Counter) TableName() string { return DefaultTable }

// Key is a string compared byte for byte. On MySQL/MariaDB it is stored as
// VARBINARY: the default collations there are case-insensitive and ignore
// trailing spaces, which would merge the counters of records "abc", "ABC" and
// "abc ". PostgreSQL and SQLite compare varchar/text exactly already.
type Key string

// GormDBDataType implements gorm's migrator.GormDataTypeInterface.
func (Key) GormDBDataType(db *gorm.DB, field *schema.Field) string {
	return dialect.Of(db.Dialector).KeyType(field.Size) // "": the dialect's own type for a sized string
}

// Once is one key of AddOnce: the counter, the key and the delta it added
// (RemoveOnce subtracts it), kept until expires_at (NULL: forever). The
// primary key is the conflict target; the expires_at index serves the
// Runner's pruning.
type Once struct {
	RecordType Key        `gorm:"primaryKey;size:128;not null"`
	RecordID   Key        `gorm:"primaryKey;size:128;not null"`
	OpKey      Key        `gorm:"primaryKey;size:128;not null"`
	Delta      int64      `gorm:"not null"`
	ExpiresAt  *time.Time `gorm:"index"`
}

// TableName returns DefaultOnceTable.
func (Once) TableName() string { return DefaultOnceTable }
