package countercache

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/tables"

	"github.com/slotted-go/slotted/internal/errs"
)

// The counter cache and seed callbacks, registered by registerCallbacks:
//
//	create  slotted:cache_before_create  after gorm:before_create, before gorm:create   refuse counter-cache fields; lock an upsert's existing rows
//	create  slotted:cache_after_create   after gorm:create, before gorm:after_create    seed counters; count the new children
//	update  slotted:cache_before_update  after gorm:before_update, before gorm:update   lock the rows the UPDATE changes, read them
//	update  slotted:cache_after_update   after gorm:update, before gorm:after_update    read them again; move the counts
//	delete  slotted:cache_before_delete  after gorm:before_delete, before gorm:delete   lock the rows the DELETE removes, read them
//	delete  slotted:cache_after_delete   after gorm:delete, before gorm:after_delete    uncount them
//	all     slotted:cache_end_tx         after gorm:after_*                             commit the transaction begun for a statement that had none
//
// Every change is the difference of two images of the child rows the
// statement touches, each image being (foreign key, soft-deleted?, condition,
// summed column) per row: nothing before a Create, nothing after a Delete. For
// an update or delete the "before" image is selected with the statement's own
// conditions FOR UPDATE, and the statement is then restricted to exactly the
// locked rows (primary key IN (...)), so a row inserted by another
// transaction meanwhile can neither be changed without being counted nor be
// counted without being changed. The deltas are summed per parent and
// written with one upsert per parent, in (record_type, record_id) order.

// restrictLimit bounds the primary keys added to an UPDATE or DELETE (bind
// values stay below every dialect's limit). A statement changing more rows is
// not restricted: at READ COMMITTED it can change a row that another
// transaction inserted after the image was read, which is then not counted.
const restrictLimit = 10000

const (
	cacheOpKey = "slotted:cache_op"
	ownTxKey   = "slotted:own_tx"
)

func (p *Caches) RegisterCallbacks(db *gorm.DB) error {
	type reg struct {
		proc interface {
			Register(string, func(*gorm.DB)) error
		}
		name string
		fn   func(*gorm.DB)
	}
	c, u, d := db.Callback().Create(), db.Callback().Update(), db.Callback().Delete()
	for _, r := range []reg{
		{c.After("gorm:before_create").Before("gorm:create"), "slotted:cache_before_create", p.cacheBeforeCreate},
		{c.After("gorm:create").Before("gorm:after_create"), "slotted:cache_after_create", p.cacheAfterCreate},
		{c.After("gorm:after_create"), "slotted:cache_end_tx", p.endOwnTx},
		{u.After("gorm:before_update").Before("gorm:update"), "slotted:cache_before_update", p.cacheBeforeChange},
		{u.After("gorm:update").Before("gorm:after_update"), "slotted:cache_after_update", p.cacheAfterChange},
		{u.After("gorm:after_update"), "slotted:cache_end_tx", p.endOwnTx},
		{d.After("gorm:before_delete").Before("gorm:delete"), "slotted:cache_before_delete", p.cacheBeforeChange},
		{d.After("gorm:delete").Before("gorm:after_delete"), "slotted:cache_after_delete", p.cacheAfterChange},
		{d.After("gorm:after_delete"), "slotted:cache_end_tx", p.endOwnTx},
	} {
		if err := r.proc.Register(r.name, r.fn); err != nil {
			return err
		}
	}
	return nil
}

// cacheOp carries a statement's "before" image to its after callback.
type cacheOp struct {
	cc     *childCaches
	deltas deltas
	keys   []any            // the locked rows' primary keys: the "after" image reads them again
	locks  []tables.Counter // an upsert's key locks (lockKeys)
	// recheck is the statement's WHERE, evaluated on rows locked by primary
	// key (countercache_locks.go): a row that no longer matches is skipped.
	recheck clause.Expression
	// records are the new children of a Create from maps, as structs.
	records []reflect.Value
	// share reads the images FOR SHARE; propagate holds the counter changes
	// being carried up to the caches that add them up (countercache_multilevel.go).
	share     bool
	propagate map[*meta.Counter]map[string]int64
	// join: the statement writes a many-to-many join table
	// (countercache_many2many.go); cc is nil.
	join     *joinCaches
	inserted int64    // the join rows a DO NOTHING insert inserted
	live     liveness // which far-side rows of the pairs are alive (soft delete)
	// paired: an "after" image follows (update, upsert); the "before"
	// images wait in before, and only rows whose image changed count, with
	// the totals read before the statement (or after it, when totalsLater).
	paired, totalsLater bool
	before              map[string]pendingRow
}

// otherTable reports a statement on the model's struct but another table
// (db.Table("archive")), whose rows no counter counts.
func otherTable(s *gorm.Statement) bool {
	return (s.Table != "" && s.Table != s.Schema.Table) || s.TableExpr != nil
}

// cacheBeforeCreate refuses non-zero counter-cache fields on new parents and
// locks the rows an upsert of children may change.
func (p *Caches) cacheBeforeCreate(db *gorm.DB) {
	s := db.Statement
	if db.Error != nil || s.Schema == nil || db.DryRun {
		return
	}
	_, upsert := s.Clauses["ON CONFLICT"]
	if m, _ := p.models.OfSchema(db, s.Schema); m != nil && len(m.Counters) > 0 {
		if err := p.checkSeeds(db, m, upsert); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	if jc := p.joinOf(s); jc != nil {
		p.joinBeforeCreate(db, jc)
		return
	}
	if links := p.farsOf(s.Schema.ModelType); links != nil && upsert && !otherTable(s) {
		if p.farBeforeUpsert(db, links); db.Error != nil {
			return
		}
	}
	cc := p.childCachesOf(s.Schema.ModelType)
	if cc == nil || otherTable(s) {
		return
	}
	if k := s.ReflectValue.Kind(); k == reflect.Map || (k == reflect.Slice && s.ReflectValue.Type().Elem().Kind() == reflect.Map) {
		records, err := cc.fromMaps(db, upsert)
		if err != nil {
			_ = db.AddError(err)
			return
		}
		db.InstanceSet(cacheOpKey, &cacheOp{cc: cc, deltas: deltas{}, records: records})
		return
	}
	if !upsert {
		if cc.selectOnCreate || cc.restricted(s) {
			beginOwnTx(db) // the INSERT and its read-back in one transaction
		}
		return
	}
	// An upsert may update existing children (Save of a slice, association
	// saving, OnConflict): their "before" image is read by primary key.
	op := &cacheOp{cc: cc, deltas: deltas{}, paired: true, totalsLater: !nestedSaves(s)}
	var keys []any
	meta.EachStruct(s.ReflectValue, func(v reflect.Value) {
		if k, ok := cc.keyOf(s.Context, v); ok {
			keys = append(keys, k)
		}
	})
	if len(keys) > 0 {
		if beginOwnTx(db); db.Error != nil {
			return
		}
		if err := p.lockKeys(db, cc, op, keys); err != nil {
			_ = db.AddError(err)
			return
		}
		if err := p.readImagesByKey(db, cc, op, -1, keys); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	db.InstanceSet(cacheOpKey, op)
}

// lockKeys serializes upserts of the same child keys. A SELECT ... FOR UPDATE
// cannot lock a row that does not exist yet (PostgreSQL and READ COMMITTED
// InnoDB take no gap locks), so two upserts of one new key would both read an
// empty "before" and count the row twice. Each key's lock is a row of the
// counter table, upserted (locked) here and deleted in cacheAfterCreate, in
// the same transaction: the second upsert waits for the first to commit and
// then reads the row the first inserted.
//
//	INSERT INTO slotted_counters (record_type, record_id, slot, count) VALUES ('slotted:upsert:comments','7',0,0)
//	  ON DUPLICATE KEY UPDATE count = slotted_counters.count
func (p *Caches) lockKeys(db *gorm.DB, cc *childCaches, op *cacheOp, keys []any) error {
	if !p.dialect.LockingReads {
		return nil // SQLite: one writer at a time
	}
	typ := upsertLockPrefix + cc.schema.Table
	if len(typ) > errs.MaxKeyLen {
		typ = typ[:errs.MaxKeyLen]
	}
	for _, k := range keys {
		id, ok, err := cc.keyID(k)
		if err != nil {
			return err
		}
		if ok {
			op.locks = append(op.locks, tables.Counter{RecordType: tables.Key(typ), RecordID: tables.Key(id)})
		}
	}
	slices.SortFunc(op.locks, func(a, b tables.Counter) int { return cmp.Compare(a.RecordID, b.RecordID) })
	op.locks = slices.CompactFunc(op.locks, tables.SameCounter)
	return p.upsertLockRows(session.Routed(db), op.locks)
}

// upsertLockRows upserts rows without changing them, 500 a statement: each
// row's lock is then held until the transaction ends (lockKeys, Fix's
// lockSlots).
func (p *Caches) upsertLockRows(tx *gorm.DB, rows []tables.Counter) error {
	for chunk := range slices.Chunk(rows, 500) {
		if err := tx.Table(p.cfg.Table).Clauses(keepCountClause()).Create(&chunk).Error; err != nil {
			return err
		}
	}
	return nil
}

// upsertLockPrefix starts the record_type of lockKeys' rows; they never outlive their transaction.
const upsertLockPrefix = "slotted:upsert:"

// keepCountClause upserts a row without changing it: the conflicting row is locked.
func keepCountClause() clause.OnConflict {
	return clause.OnConflict{Columns: tables.KeyColumns(), DoUpdates: clause.Set{{
		Column: clause.Column{Name: "count"},
		Value:  clause.Column{Table: clause.CurrentTable, Name: "count"},
	}}}
}

// unlockKeys deletes lockKeys' rows (their locks last until the commit).
func (p *Caches) unlockKeys(db *gorm.DB, op *cacheOp) error {
	if len(op.locks) == 0 {
		return nil
	}
	tx := session.Routed(db)
	for chunk := range slices.Chunk(op.locks, tables.RewriteChunk) {
		if err := tx.Table(p.cfg.Table).Where(tables.SlotsCondition(chunk)).Delete(&tables.Counter{}).Error; err != nil {
			return err
		}
	}
	return nil
}

// cacheAfterCreate seeds the new parents' counters and counts the new children.
func (p *Caches) cacheAfterCreate(db *gorm.DB) {
	s := db.Statement
	if db.Error != nil || s.Schema == nil || db.DryRun {
		return
	}
	_, upsert := s.Clauses["ON CONFLICT"]
	if m, _ := p.models.OfSchema(db, s.Schema); m != nil && len(m.Counters) > 0 {
		if err := p.seed(db, m, upsert); err != nil {
			_ = db.AddError(fmt.Errorf("slotted: seeding counters of %s: %w", m.Type, err))
			return
		}
	}
	if jc := p.joinOf(s); jc != nil {
		p.joinAfterCreate(db)
		return
	}
	if upsert && p.farsOf(s.Schema.ModelType) != nil {
		if p.farAfterChange(db); db.Error != nil {
			return
		}
	}
	cc := p.childCachesOf(s.Schema.ModelType)
	if cc == nil || otherTable(s) {
		return
	}
	// After the cheap checks: InstanceGet allocates, and plain gorm models
	// without counters must not pay for the plugin.
	v, _ := db.InstanceGet(cacheOpKey)
	op, _ := v.(*cacheOp)
	if op != nil {
		if err := p.unlockKeys(db, op); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	if db.RowsAffected == 0 {
		return
	}
	if op == nil {
		op = &cacheOp{cc: cc, deltas: deltas{}, paired: true} // no "before": new rows bring no counter total
	}
	if upsert || cc.selectOnCreate || (op.records == nil && cc.restricted(s)) {
		// Read the rows back: the database decides what an upsert changed,
		// what a condition without Match says, and what a column left out of
		// the INSERT (Omit, Select) holds.
		var keys []any
		meta.EachStruct(s.ReflectValue, func(v reflect.Value) {
			if k, ok := cc.keyOf(s.Context, v); ok {
				keys = append(keys, k)
			}
		})
		if len(keys) > 0 {
			if err := p.readImagesByKey(db, cc, op, +1, keys); err != nil {
				_ = db.AddError(err)
				return
			}
		}
		if err := p.countBefore(db, op); err != nil {
			_ = db.AddError(err)
			return
		}
	} else {
		var err error
		count := func(v reflect.Value) {
			if err == nil {
				err = cc.contribute(op.deltas, cc.memoryImage(db, v), +1, v)
			}
		}
		if op.records != nil {
			for _, v := range op.records {
				count(v)
			}
		} else {
			meta.EachStruct(s.ReflectValue, count)
		}
		if err != nil {
			_ = db.AddError(err)
			return
		}
	}
	if err := p.applyDeltas(db, op.deltas); err != nil {
		_ = db.AddError(fmt.Errorf("slotted: counting new %s: %w", s.Schema.Name, err))
	}
}

// cacheBeforeChange locks and reads the child rows an UPDATE or DELETE is
// about to change, and restricts the statement to them.
func (p *Caches) cacheBeforeChange(db *gorm.DB) {
	s := db.Statement
	if db.Error != nil || s.Schema == nil || db.DryRun || s.SQL.Len() > 0 {
		return
	}
	deleting := slices.Contains(s.BuildClauses, "DELETE")
	if jc := p.joinOf(s); jc != nil {
		p.joinBeforeChange(db, jc)
		return
	}
	if links := p.farsOf(s.Schema.ModelType); links != nil && !otherTable(s) {
		if p.farBeforeChange(db, links, deleting); db.Error != nil {
			return
		}
	}
	if links := p.sidesOf(s.Schema.ModelType); deleting && links != nil && !otherTable(s) {
		if p.cascadeJoinRows(db, links); db.Error != nil {
			return
		}
	}
	cc := p.childCachesOf(s.Schema.ModelType)
	if cc == nil || otherTable(s) {
		return
	}
	if !deleting && cc.watched != nil {
		if cols, known := assignedColumns(s); known && !touches(cols, cc.watched) {
			return // no foreign key, sum, soft-delete or condition column changes
		}
	}
	scope, ok := targetScope(db, cc, true)
	if !ok {
		return // no condition at all: gorm refuses the statement (ErrMissingWhereClause)
	}
	if beginOwnTx(db); db.Error != nil {
		return
	}
	op := &cacheOp{cc: cc, deltas: deltas{}, paired: !deleting, totalsLater: !deleting && !nestedSaves(s)}
	if where, ordered := p.orderedLocks(s); ordered {
		var keys []any
		if keys, ok = p.candidateKeys(db, cc, s.Unscoped, scope); ok {
			op.recheck = where
			scope = func(q *gorm.DB) *gorm.DB {
				return q.Where(keyIn(cc, keys)).Order(cc.keyOrder())
			}
		} else if db.Error != nil {
			return
		}
	}
	if err := p.readImages(db, cc, op, -1, s.Unscoped, scope); err != nil {
		_ = db.AddError(err)
		return
	}
	if len(op.keys) <= restrictLimit {
		s.AddClause(clause.Where{Exprs: []clause.Expression{keyIn(cc, op.keys)}})
	}
	db.InstanceSet(cacheOpKey, op)
}

// cacheAfterChange reads the changed rows again (updates; a deleted row has
// no "after") and writes the difference.
func (p *Caches) cacheAfterChange(db *gorm.DB) {
	if s := db.Statement; s.Schema != nil && p.farsOf(s.Schema.ModelType) != nil {
		p.farAfterChange(db)
	}
	v, ok := db.InstanceGet(cacheOpKey)
	if !ok || db.Error != nil {
		return
	}
	op := v.(*cacheOp)
	if op.join != nil {
		if err := p.applyDeltas(db, op.deltas); err != nil {
			_ = db.AddError(fmt.Errorf("slotted: counting deleted rows of %s: %w", op.join.table, err))
		}
		return
	}
	s := db.Statement
	// A soft delete is an UPDATE of deleted_at: a cache counting deleted rows
	// reads them again, as after any update.
	softDelete := op.cc.withDeleted && !s.Unscoped && op.cc.deleted != nil
	if (!slices.Contains(s.BuildClauses, "DELETE") || softDelete) && len(op.keys) > 0 {
		after := &cacheOp{cc: op.cc, deltas: op.deltas, paired: op.paired, totalsLater: op.totalsLater, before: op.before}
		if err := p.readImagesByKey(db, op.cc, after, +1, op.keys); err != nil {
			_ = db.AddError(err)
			return
		}
		if err := p.countBefore(db, after); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	if err := p.applyDeltas(db, op.deltas); err != nil {
		_ = db.AddError(fmt.Errorf("slotted: counting changed %s: %w", op.cc.schema.Name, err))
	}
}

// restricted reports whether a Create's Select or Omit leaves a column the
// caches read out of the INSERT: the row then holds the column's default,
// not the struct's value.
func (cc *childCaches) restricted(s *gorm.Statement) bool {
	if len(s.Selects) == 0 && len(s.Omits) == 0 {
		return false
	}
	cols, selectOnly := s.SelectAndOmitColumns(true, false)
	for _, f := range cc.schema.Fields {
		if f.DBName == "" || (cc.watched != nil && !cc.watched[f.DBName]) {
			continue
		}
		if v, ok := cols[f.DBName]; (ok && !v) || (!ok && selectOnly) {
			return true
		}
	}
	return false
}

// targetScope selects the rows an UPDATE or DELETE will change: its WHERE,
// the primary keys of its model value (gorm adds them at gorm:update /
// gorm:delete), and (limited) its ORDER BY and LIMIT where the dialect builds
// them for this statement (MySQL). ok is false for a statement without any
// condition that gorm will refuse.
func targetScope(db *gorm.DB, cc *childCaches, limited bool) (func(*gorm.DB) *gorm.DB, bool) {
	s := db.Statement
	var conds []clause.Expression
	deleting := slices.Contains(s.BuildClauses, "DELETE")
	keysOf := func(v reflect.Value) {
		if cc.key.Parts != nil && !deleting && v.Kind() == reflect.Struct {
			// gorm's UPDATE of one struct conditions on its non-zero key
			// columns, each alone: Model(&Comment{TenantID: 1}) updates the
			// tenant's every row, not the key (1, 0).
			for _, f := range cc.keyFields {
				if k, zero := f.ValueOf(s.Context, v); !zero {
					conds = append(conds, clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: f.DBName}, Value: k})
				}
			}
			return
		}
		var keys []any
		meta.EachStruct(v, func(r reflect.Value) {
			if k, ok := cc.keyOf(s.Context, r); ok {
				keys = append(keys, k)
			}
		})
		if len(keys) > 0 {
			conds = append(conds, keyIn(cc, keys))
		}
	}
	keysOf(s.ReflectValue)
	if s.Model != nil && s.Model != s.Dest && deleting {
		keysOf(reflect.ValueOf(s.Model))
	}
	where, hasWhere := s.Clauses["WHERE"]
	if !hasWhere && len(conds) == 0 && !db.AllowGlobalUpdate {
		return nil, false
	}
	return func(q *gorm.DB) *gorm.DB {
		if hasWhere {
			q = q.Clauses(where.Expression)
		}
		for _, c := range conds {
			q = q.Where(c)
		}
		if limited && deleteLimited(s) {
			if order, ok := s.Clauses["ORDER BY"]; ok && order.Expression != nil {
				q = q.Clauses(order.Expression)
			}
			q = q.Clauses(s.Clauses["LIMIT"].Expression)
		}
		return q
	}, true
}

// keyIn restricts to primary keys: for a composite key a row-value (a, b) IN
// ((?, ?), ...), which MySQL/MariaDB, PostgreSQL and SQLite (3.15+) all take
// (gorm's own Delete of composite-key structs writes it), and one key as
// a = ? AND b = ? (see meta.Key.In).
func keyIn(cc *childCaches, keys []any) clause.Expression {
	return cc.key.In(clause.CurrentTable, keys)
}

// readImagesByKey reads the images of rows by primary key (soft-deleted ones
// too), tables.LoadChunk keys per statement.
func (p *Caches) readImagesByKey(db *gorm.DB, cc *childCaches, op *cacheOp, sign int64, keys []any) error {
	for chunk := range slices.Chunk(keys, tables.LoadChunk) {
		err := p.readImages(db, cc, op, sign, true, func(q *gorm.DB) *gorm.DB { return q.Where(keyIn(cc, chunk)) })
		if err != nil {
			return err
		}
	}
	return nil
}

// beginOwnTx opens a transaction for a statement that runs outside one
// (SkipDefaultTransaction): the image is read FOR UPDATE, and the locks must
// last until the counters are written. endOwnTx commits or rolls it back.
func beginOwnTx(db *gorm.DB) {
	if session.InTx(db) {
		return
	}
	tx := db.Begin()
	if tx.Error != nil {
		_ = db.AddError(tx.Error)
		return
	}
	db.Statement.ConnPool = tx.Statement.ConnPool
	db.InstanceSet(ownTxKey, true)
}

func (p *Caches) endOwnTx(db *gorm.DB) {
	// Only the models a counter cache watches begin one (children, join
	// tables, far sides, many-to-many sides); checking that first keeps
	// InstanceGet's allocation off every other model's statements.
	if s := db.Statement; s.Schema == nil || (p.childCachesOf(s.Schema.ModelType) == nil && p.joinOf(s) == nil &&
		p.farsOf(s.Schema.ModelType) == nil && p.sidesOf(s.Schema.ModelType) == nil) {
		return
	}
	if _, ok := db.InstanceGet(ownTxKey); !ok {
		return
	}
	if db.Error != nil {
		db.Rollback()
	} else if c, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		_ = db.AddError(session.AwaitCommit(session.Context(db), c.Commit)) // commit.go: the caller's deadline holds through COMMIT
	}
	db.Statement.ConnPool = db.ConnPool
}
