package slotted

import (
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// detectReturning reports whether a MySQL-protocol server takes INSERT …
// RETURNING and DELETE … RETURNING: MariaDB 10.5 and later do; MySQL, TiDB
// and Vitess (whose VERSION() names the MySQL they emulate) do not.
func detectReturning(db *gorm.DB) (bool, error) {
	if db.DryRun {
		return false, nil
	}
	version, err := serverVersion(db)
	return mariaDBReturning(version), err
}

// mariaDBReturning reports whether version is MariaDB 10.5 or later
// ("10.11.19-MariaDB-0+deb12u1", "5.5.5-10.11.6-MariaDB" through some proxies).
func mariaDBReturning(version string) bool {
	if !strings.Contains(version, "MariaDB") {
		return false
	}
	version = strings.TrimPrefix(version, "5.5.5-")
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 10 || major == 10 && minor >= 5
}

// insertKeysEach is insertKeys without RETURNING: each key (sorted, distinct)
// is an INSERT IGNORE / ON CONFLICT DO NOTHING of its own in the batch's
// transaction, and one row affected means it was new.
func (p *Plugin) insertKeysEach(tx *gorm.DB, keys []*waiter) error {
	for _, o := range keys {
		q := tx.Table(p.cfg.OnceTable)
		if p.dialect.insertIgnore() {
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
func (p *Plugin) deleteKeysEach(tx *gorm.DB, removes []*waiter, live clause.Expression) error {
	conds := make([]clause.Expression, len(removes))
	for i, o := range removes {
		conds[i] = onceRowCondition(&o.once.row)
	}
	var found []onceRow
	q := tx.Table(p.cfg.OnceTable).Select("record_type", "record_id", "op_key", "delta").Where(clause.Or(conds...)).Where(live)
	if p.dialect.lockingReads {
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
	return tx.Table(p.cfg.OnceTable).Where(clause.Or(del...)).Delete(&onceRow{}).Error
}
