package write

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/tables"
)

// insertKeysEach is insertKeys without RETURNING: each key (sorted, distinct)
// is an INSERT IGNORE / ON CONFLICT DO NOTHING of its own in the batch's
// transaction, and one row affected means it was new.
func (p *Engine) insertKeysEach(tx *gorm.DB, keys []*waiter) error {
	for _, o := range keys {
		q := tx.Table(p.cfg.OnceTable)
		if p.dialect.InsertIgnore {
			q = q.Clauses(clause.Insert{Modifier: "IGNORE"})
		} else {
			q = q.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "record_type"}, {Name: "record_id"}, {Name: "op_key"}}, DoNothing: true})
		}
		row := o.once.row
		res := q.Create(&row)
		if res.Error != nil {
			return res.Error
		}
		o.once.applied = res.RowsAffected == 1
	}
	return nil
}

// deleteKeysEach is deleteKeys without RETURNING: the live keys of removes
// are read with their deltas under a lock, then deleted, in the batch's
// transaction.
func (p *Engine) deleteKeysEach(tx *gorm.DB, removes []*waiter, live clause.Expression) error {
	conds := make([]clause.Expression, len(removes))
	for i, o := range removes {
		conds[i] = onceRowCondition(&o.once.row)
	}
	var found []tables.Once
	q := tx.Table(p.cfg.OnceTable).Select("record_type", "record_id", "op_key", "delta").Where(clause.Or(conds...)).Where(live)
	if p.dialect.LockingReads {
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	if err := q.Find(&found).Error; err != nil || len(found) == 0 {
		return err
	}
	index := byOnceKey(removes)
	del := make([]clause.Expression, 0, len(found))
	for i := range found {
		if o := index[onceKeyOf(&found[i])]; o != nil {
			o.once.applied, o.once.row.Delta = true, found[i].Delta
			del = append(del, onceRowCondition(&found[i]))
		}
	}
	if len(del) == 0 {
		return nil
	}
	return tx.Table(p.cfg.OnceTable).Where(clause.Or(del...)).Delete(&tables.Once{}).Error
}
