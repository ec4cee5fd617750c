package slotted

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"
)

// Compact folds all slot rows of one counter into a single row, in one
// transaction, so reads sum one row instead of up to Slots. The total does
// not change, and increments racing the compaction are neither lost nor
// counted twice:
//
//	BEGIN                                 -- BEGIN IMMEDIATE on SQLite
//	SELECT record_type, record_id, slot, count FROM slotted_counters
//	  WHERE record_type = 'posts.likes' AND record_id = '42' ORDER BY slot FOR UPDATE
//	DELETE FROM slotted_counters WHERE (record_type, record_id, slot) IN (('posts.likes','42',3), ...)
//	INSERT INTO slotted_counters (record_type, record_id, slot, count) VALUES ('posts.likes','42',3,<sum>)
//	COMMIT
//
// Only the rows it locked are deleted and only their counts are summed: a
// writer blocked on one of them adds to the new row after the commit, and a
// slot row created meanwhile (PostgreSQL takes no gap locks) is left alone.
// Writers keep spreading over new slots afterwards, so compaction is a
// periodic job (see CompactAll and Runner), not a one-off.
func Compact(db *gorm.DB, model any, counter string) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	c, _, id, err := p.models.Target(db, model, counter)
	if err != nil {
		return err
	}
	_, err = p.maint.CompactRefs(db, []Ref{{Type: c.RecordType, ID: id}}, true)
	return err
}

// CompactRef is Compact for a counter named by Ref.
func CompactRef(db *gorm.DB, ref Ref) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	if err := ref.Validate(); err != nil {
		return err
	}
	_, err = p.maint.CompactRefs(db, []Ref{ref}, true)
	return err
}

// Reset sets a counter to value atomically: the "recount from the source"
// case. Its slot rows are locked, deleted and replaced by one row holding
// value (none when value is 0), so afterwards the counter is value plus
// exactly the increments that committed after the reset. model's field is
// set to value too, so model must be a pointer, as for Add.
func Reset(db *gorm.DB, model any, counter string, value int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	if err := meta.Settable(model); err != nil {
		return err
	}
	c, v, id, err := p.models.Target(db, model, counter)
	if err != nil {
		return err
	}
	if err := p.maint.Reset(db, Ref{Type: c.RecordType, ID: id}, value); err != nil {
		return err
	}
	c.Set(v, value)
	return nil
}

// ResetRef is Reset for a counter named by Ref.
func ResetRef(db *gorm.DB, ref Ref, value int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	if err := ref.Validate(); err != nil {
		return err
	}
	return p.maint.Reset(db, ref, value)
}

// Compaction and reset share their steps, each in one write transaction
// (session.go's writeTx: READ COMMITTED, or BEGIN IMMEDIATE on SQLite):
//
//	lockRows      read the counters' slot rows with FOR UPDATE, in key order
//	planCompaction / planReset   which locked rows go, which rows replace them
//	seedRow       a reset of a counter without rows: upsert slot 0
//	replaceRows   delete exactly the locked rows, insert the planned ones
//
// Exactness rests on two rules: rows are locked in key order (as every writer
// of several counters does, so no deadlock cycles), and only rows locked by
// the transaction are summed and deleted. A writer blocked on a locked row adds
// to the new row after the commit; a slot row created meanwhile (PostgreSQL and
// READ COMMITTED InnoDB take no gap locks) is left alone and still counts.
