package countercache

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"
)

// Many-to-many counter caches: a tag's post count is the number of rows in
// gorm's join table (post_tags) that hold the tag's key.
//
//	type Post struct {
//		ID   uint
//		Tags []Tag `gorm:"many2many:post_tags"`
//		TagCount int64 `gorm:"-" slotted:"tags"`
//	}
//	type Tag struct {
//		ID    uint
//		Posts []Post `gorm:"many2many:post_tags"`
//		PostCount int64 `gorm:"-" slotted:"posts"`
//	}
//	slotted.CounterCache(db, &Tag{}, "Posts", "posts") // join rows with the tag's tag_id
//	slotted.CounterCache(db, &Post{}, "Tags", "tags")  // join rows with the post's post_id
//
// The counted rows have no Go model of the user's: gorm writes them through
// a schema it builds for the join table (rel.JoinTable; or the model given
// to SetupJoinTable), from either side's relationship, so the caches are
// found by the statement's table, and its columns by name.
//
// What gorm does to the join table, and what the plugin does around it:
//
//	nested create, Association Append/Replace   INSERT ... ON CONFLICT DO NOTHING (gorm, one statement)
//	  before it: each new pair inserted by the plugin on its own, in key order, with
//	  INSERT IGNORE / ON CONFLICT DO NOTHING: one row affected means new, so a pair
//	  already present counts nothing; gorm's statement then finds every row present.
//	Association Delete/Replace/Clear            DELETE FROM post_tags WHERE post_id IN (..) AND tag_id [NOT] IN (..)
//	  before it: the candidate pairs read without locks, then locked by primary key
//	  in key order, the statement's conditions re-checked; the DELETE is restricted
//	  to the locked pairs, each uncounted.
//	hard delete of a post or a tag              gorm leaves the join rows (or a foreign key refuses)
//	  before it: the plugin deletes its join rows through gorm in the same
//	  transaction (the row above), as Rails' has_and_belongs_to_many does.
//	soft delete or restore of a post            its join rows stop or start counting, unless
//	  WithDeleted (countercache_many2many_far.go).
//
// The counter rows are upserted after the join rows are locked, in
// (record_type, record_id) order, like every counter cache's.

// joinCaches are the counter caches counting the rows of one join table.
type joinCaches struct {
	table string
	// cols are the pair's columns, in the order its rows are locked (the
	// first declaration's join schema: its primary key order).
	cols   [2]string
	fields [2]*schema.Field // the declaring join schema's fields of cols (scan types)
	caches []*counterCache
	fars   []*farSide // the soft-deletable sides some cache watches, one per pair position
}

// sideLink is a join table a model's hard delete empties of its rows.
type sideLink struct {
	join *schema.Schema
	col  string        // the join column holding the model's key
	key  *schema.Field // the model's primary key
}

const joinInsertKey = "slotted:join_insert"

// joinOf returns the many-to-many caches counting the rows a statement
// writes, or nil.
func (p *Caches) joinOf(s *gorm.Statement) *joinCaches {
	if !p.caches.joins.Load() || s.Schema == nil {
		return nil
	}
	// db.Table("post_tags") sets both Table and TableExpr (the quoted name);
	// a TableExpr alone is an expression no name can be read from.
	t := s.Table
	if t == "" {
		if s.TableExpr != nil {
			return nil
		}
		t = s.Schema.Table
	}
	v, ok := p.caches.byJoin.Load(t)
	if !ok {
		return nil
	}
	jc := v.(*joinCaches)
	if s.Schema.LookUpField(jc.cols[0]) == nil || s.Schema.LookUpField(jc.cols[1]) == nil {
		return nil // a model of another shape on that table: nothing to read the pair from
	}
	if _, inner := s.Settings.Load(joinInsertKey); inner {
		return nil
	}
	return jc
}

// softDeleteField returns a schema's gorm.DeletedAt-like field, or nil.
func softDeleteField(s *schema.Schema) *schema.Field {
	for _, f := range s.Fields {
		if f.DBName == "" {
			continue
		}
		if _, ok := reflect.New(f.IndirectFieldType).Interface().(schema.DeleteClausesInterface); ok {
			return f
		}
	}
	return nil
}

// declareMany2Many checks a many-to-many declaration and registers it: the
// parent is the model named (rel.Schema), the counted rows the join rows
// holding its key.
func (p *Caches) declareMany2Many(db *gorm.DB, typ reflect.Type, association, counter string, rel *schema.Relationship, spec Spec) error {
	name := typ.String() + "." + association
	switch {
	case spec.Where != nil || spec.Match != nil:
		return fmt.Errorf("%w: %s: Where/Match on a many-to-many counter cache is not supported (the counted rows are join rows; count a condition on the far side with a counter of its own)", errs.ErrInvalidConfig, name)
	case spec.Sum != "":
		return fmt.Errorf("%w: %s: Sum on a many-to-many counter cache is not supported (join rows have no column to add up)", errs.ErrInvalidConfig, name)
	case spec.SumCounter != "":
		return fmt.Errorf("%w: %s: SumCounter over a many-to-many relationship is not supported", errs.ErrInvalidConfig, name)
	}
	join := rel.JoinTable
	if join == nil {
		return fmt.Errorf("%w: %s: no join table", errs.ErrInvalidConfig, name)
	}
	var own, other *schema.Field
	for _, ref := range rel.References {
		switch {
		case ref.PrimaryValue != "":
			return fmt.Errorf("%w: %s: a polymorphic many-to-many relationship is not supported", errs.ErrInvalidConfig, name)
		case ref.OwnPrimaryKey && own == nil:
			own = ref.ForeignKey
		case !ref.OwnPrimaryKey && other == nil:
			other = ref.ForeignKey
		default:
			return fmt.Errorf("%w: %s: a many-to-many counter cache needs single-column keys on both sides", errs.ErrUnsupportedModel, name)
		}
	}
	if own == nil || other == nil || own.DBName == other.DBName {
		return fmt.Errorf("%w: %s: the join table needs one column per side", errs.ErrInvalidConfig, name)
	}
	parent, err := p.models.OfSchema(db, rel.Schema)
	if err != nil {
		return err
	}
	if parent.Key.Parts != nil || len(rel.FieldSchema.PrimaryFields) != 1 {
		return fmt.Errorf("%w: %s: a many-to-many counter cache needs single-column keys on both sides", errs.ErrUnsupportedModel, name)
	}
	c, err := parent.Counter(counter)
	if err == nil && c.Bucket != nil {
		err = fmt.Errorf("%w: counter %q is bucketed; a counter cache keeps a plain counter", errs.ErrInvalidConfig, counter)
	}
	if err != nil {
		return err
	}
	for _, f := range []*schema.Field{own, other} {
		if err := fkSupported(f.FieldType); err != nil {
			return fmt.Errorf("%w: %s.%s: %v", errs.ErrInvalidConfig, join.Table, f.DBName, err)
		}
	}
	if f := softDeleteField(join); f != nil {
		return fmt.Errorf("%w: %s: the join model %s has soft delete (%s); join rows are counted while they exist", errs.ErrUnsupportedModel, name, join.Name, f.Name)
	}
	cc := &counterCache{parent: parent, counter: c, fk: own, weight: 1, deleted: true, joinCol: own.DBName, child: &childCaches{schema: join}}
	if spec.Weight != 0 {
		cc.weight = spec.Weight
	}
	farDeleted := softDeleteField(rel.FieldSchema)
	if farDeleted != nil && !spec.WithDeleted && farDeleted.IndirectFieldType != reflect.TypeOf(gorm.DeletedAt{}) {
		// Fix and the liveness reads know a live row by deleted_at IS NULL.
		return fmt.Errorf("%w: %s: %s's soft delete field %s is a %s; a many-to-many counter cache follows gorm.DeletedAt only (or count soft-deleted rows too: WithDeleted)", errs.ErrUnsupportedModel, name, rel.FieldSchema.Name, farDeleted.Name, farDeleted.FieldType)
	}
	if spec.Touch {
		if cc.touch = touchField(rel.Schema); cc.touch == nil {
			return fmt.Errorf("%w: Touch: %s has no autoUpdateTime column (UpdatedAt)", errs.ErrInvalidConfig, rel.Schema.Name)
		}
	}

	r := &p.caches
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, dup := r.byCounter.Load(c); dup {
		return fmt.Errorf("%w: counter %q of %s is already a counter cache of %s", errs.ErrInvalidConfig, c.Name, parent.Type, prev.(*counterCache).child.schema.Name)
	}
	next := &joinCaches{table: join.Table, cols: [2]string{own.DBName, other.DBName}, fields: [2]*schema.Field{own, other}}
	if len(join.PrimaryFields) == 2 && join.PrimaryFields[0].DBName == other.DBName {
		next.cols, next.fields = [2]string{other.DBName, own.DBName}, [2]*schema.Field{other, own}
	}
	if v, ok := r.byJoin.Load(join.Table); ok {
		prev := v.(*joinCaches)
		if !slices.Contains(prev.cols[:], own.DBName) || !slices.Contains(prev.cols[:], other.DBName) {
			return fmt.Errorf("%w: %s: join table %s is counted by columns %v already", errs.ErrInvalidConfig, name, join.Table, prev.cols)
		}
		next.cols, next.fields = prev.cols, prev.fields
		next.caches = slices.Clone(prev.caches)
	}
	if next.cols[1] == own.DBName {
		cc.joinAt = 1
	}
	if farDeleted != nil && !spec.WithDeleted {
		cc.far = &farSide{schema: rel.FieldSchema, key: rel.FieldSchema.PrimaryFields[0], deleted: farDeleted, at: 1 - cc.joinAt, col: other.DBName}
		var links []farLink
		if v, ok := r.fars.Load(rel.FieldSchema.ModelType); ok {
			links = slices.Clone(v.([]farLink))
		}
		if !slices.ContainsFunc(links, func(l farLink) bool { return l.table == join.Table && l.at == cc.far.at }) {
			links = append(links, farLink{table: join.Table, at: cc.far.at, far: cc.far})
		}
		r.fars.Store(rel.FieldSchema.ModelType, links)
	}
	next.caches = append(next.caches, cc)
	next.fars = nil
	for _, c := range next.caches {
		if c.far != nil && !slices.ContainsFunc(next.fars, func(f *farSide) bool { return f.at == c.far.at }) {
			next.fars = append(next.fars, c.far)
		}
	}
	r.byJoin.Store(join.Table, next)
	r.byCounter.Store(c, cc)
	for _, side := range []struct {
		s   *schema.Schema
		col string
	}{{rel.Schema, own.DBName}, {rel.FieldSchema, other.DBName}} {
		var links []sideLink
		if v, ok := r.sides.Load(side.s.ModelType); ok {
			links = slices.Clone(v.([]sideLink))
		}
		if !slices.ContainsFunc(links, func(l sideLink) bool { return l.join.Table == join.Table && l.col == side.col }) {
			links = append(links, sideLink{join: join, col: side.col, key: side.s.PrimaryFields[0]})
		}
		r.sides.Store(side.s.ModelType, links)
	}
	r.joins.Store(true)
	return nil
}

// pair is one join row: its two columns' values and the record ids they name.
type pair struct {
	vals [2]any
	ids  [2]string
	ok   [2]bool
	elem reflect.Value // the struct gorm inserts (creates only)
}

func comparePairs(a, b pair) int {
	if c := compareIDs(a.ids[0], b.ids[0]); c != 0 {
		return c
	}
	return compareIDs(a.ids[1], b.ids[1])
}

// pairOf reads a join row from its values.
func pairOf(a, b any) (pair, error) {
	pr := pair{vals: [2]any{a, b}}
	for i, v := range pr.vals {
		var err error
		if pr.ids[i], pr.ok[i], err = fkID(v); err != nil {
			return pr, err
		}
	}
	return pr, nil
}

// contribute adds sign times what one join row counts in each cache.
func (jc *joinCaches) contribute(d deltas, pr pair, sign int64, live liveness) error {
	for _, c := range jc.caches {
		if !pr.ok[c.joinAt] || !c.counts(pr, live) {
			continue
		}
		if err := d.add(c, pr.ids[c.joinAt], sign, c.weight); err != nil {
			return err
		}
	}
	return nil
}

// pairsOf reads the pairs of the structs a statement writes.
func (jc *joinCaches) pairsOf(s *gorm.Statement) ([]pair, error) {
	fa, fb := s.Schema.LookUpField(jc.cols[0]), s.Schema.LookUpField(jc.cols[1])
	var out []pair
	var err error
	meta.EachStruct(s.ReflectValue, func(v reflect.Value) {
		if err != nil {
			return
		}
		a, _ := fa.ValueOf(s.Context, v)
		b, _ := fb.ValueOf(s.Context, v)
		var pr pair
		if pr, err = pairOf(a, b); err == nil {
			pr.elem = v
			out = append(out, pr)
		}
	})
	return out, err
}

// joinBeforeCreate inserts the new pairs of an insert-unless-present (gorm's
// ON CONFLICT DO NOTHING) one by one, each counted if it was inserted. A
// plain INSERT is counted after it, row by row: a pair present fails it.
func (p *Caches) joinBeforeCreate(db *gorm.DB, jc *joinCaches) {
	s := db.Statement
	if k := s.ReflectValue.Kind(); k == reflect.Map || (k == reflect.Slice && s.ReflectValue.Type().Elem().Kind() == reflect.Map) {
		_ = db.AddError(fmt.Errorf("%w: join rows of %s are counted when created from structs (Association, or the join model)", errs.ErrUnsupportedModel, jc.table))
		return
	}
	op := &cacheOp{join: jc, deltas: deltas{}}
	db.InstanceSet(cacheOpKey, op)
	_, upsert := s.Clauses["ON CONFLICT"]
	if !upsert && len(jc.fars) == 0 {
		return
	}
	pairs, err := jc.pairsOf(s)
	if err != nil || len(pairs) == 0 {
		_ = db.AddError(err)
		return
	}
	if beginOwnTx(db); db.Error != nil {
		return
	}
	if len(jc.fars) > 0 {
		// The far-side rows first, shared: a soft delete of one waits, or is waited for.
		if op.live, err = p.readAlive(db, jc, pairs, true); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	if !upsert {
		return
	}
	op.paired = true // counted here, not after
	slices.SortStableFunc(pairs, comparePairs)
	pairs = slices.CompactFunc(pairs, func(a, b pair) bool { return comparePairs(a, b) == 0 })
	// Hooks ran already on these structs (gorm:before_create); gorm's own
	// statement, which follows, then finds every row present.
	tx := session.Routed(db).Session(&gorm.Session{SkipHooks: true}).Set(joinInsertKey, true)
	// The statement's Select/Omit hold for its rows, inserted here.
	tx.Statement.Selects, tx.Statement.Omits = slices.Clone(s.Selects), slices.Clone(s.Omits)
	conflict, _ := s.Clauses["ON CONFLICT"].Expression.(clause.OnConflict)
	present, err := p.insertPairs(tx, jc, op, pairs)
	// An upsert that updates the join model's columns keeps gorm's statement,
	// which would insert, uncounted, a present pair that another transaction
	// deletes before it runs. MySQL's INSERT IGNORE has locked the present rows
	// already (shared, as a duplicate key does); PostgreSQL's DO NOTHING has
	// not: they are locked here, and one deleted meanwhile is inserted again.
	for try := 0; err == nil && len(present) > 0 && !conflict.DoNothing && !p.dialect.InsertIgnore && p.dialect.LockingReads; try++ {
		var locked []pair
		if locked, err = p.readPairs(db, jc, nil, p.lockingClause(false), func(q *gorm.DB) *gorm.DB { return q.Where(jc.pairsCondition(present)) }); err != nil {
			break
		}
		still := map[[2]string]bool{}
		for _, pr := range locked {
			still[pr.ids] = true
		}
		gone := slices.DeleteFunc(present, func(pr pair) bool { return still[pr.ids] })
		if len(gone) > 0 && try >= 10 {
			err = fmt.Errorf("slotted: join rows of %s deleted and re-created concurrently too often", jc.table)
			break
		}
		present, err = p.insertPairs(tx, jc, op, gone)
	}
	if err != nil {
		_ = db.AddError(err)
		return
	}
	// Every pair is now in the table, inserted above or present. gorm's own
	// statement would insert nothing, except a present pair that another
	// transaction deleted since (PostgreSQL's DO NOTHING locks no row), which
	// it would then insert uncounted; and on MySQL its ON DUPLICATE KEY
	// UPDATE takes next-key locks on every row, a deadlock with the
	// neighbouring pairs' inserts. A DO NOTHING insert is therefore replaced
	// by a statement that does nothing. An upsert that updates columns of
	// the join model keeps its statement.
	if conflict.DoNothing {
		s.SQL.Reset()
		s.SQL.WriteString("SELECT 1")
		s.Vars = nil
	}
}

// insertPairs inserts each pair by itself unless present, in key order,
// counting the ones inserted; it returns the pairs that were present.
//
// MySQL's INSERT IGNORE turns every error into a warning, a foreign key's
// or a truncation's too, not only the duplicate key. A pair it did not
// insert is therefore read (FOR SHARE; IGNORE holds that lock on a duplicate
// already): found, it was present; not found, it is inserted again without
// IGNORE, which returns the error IGNORE swallowed (or inserts it, if
// another transaction deleted it in between). A present pair costs one read
// and logs no error line, as a duplicate-key INSERT would.
func (p *Caches) insertPairs(tx *gorm.DB, jc *joinCaches, op *cacheOp, pairs []pair) (present []pair, err error) {
	for _, pr := range pairs {
		row := pr.elem
		if row.CanAddr() {
			row = row.Addr()
		} else { // Create(M{...}) by value: gorm's own statement writes nothing back to it either
			n := reflect.New(row.Type())
			n.Elem().Set(row)
			row = n
		}
		q := tx.Session(&gorm.Session{}).Table(jc.table)
		if p.dialect.InsertIgnore {
			q = q.Clauses(clause.Insert{Modifier: "IGNORE"})
		} else {
			q = q.Clauses(clause.OnConflict{DoNothing: true})
		}
		res := q.Create(row.Interface())
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 && p.dialect.InsertIgnore {
			found, err := p.readPairs(tx, jc, nil, p.readLock(true), func(q *gorm.DB) *gorm.DB { return q.Where(jc.pairsCondition([]pair{pr})) })
			if err != nil {
				return nil, err
			}
			if len(found) == 0 {
				if err := tx.Session(&gorm.Session{}).Table(jc.table).Create(row.Interface()).Error; err != nil {
					return nil, err
				}
				res.RowsAffected = 1
			}
		}
		if res.RowsAffected != 1 {
			present = append(present, pr)
			continue
		}
		op.inserted++
		if err := jc.contribute(op.deltas, pr, +1, op.live); err != nil {
			return nil, err
		}
	}
	return present, nil
}

// joinAfterCreate counts a plain INSERT's rows and writes the deltas.
func (p *Caches) joinAfterCreate(db *gorm.DB) {
	v, ok := db.InstanceGet(cacheOpKey)
	if !ok || db.Error != nil {
		return
	}
	op := v.(*cacheOp)
	if !op.paired && db.RowsAffected > 0 {
		pairs, err := op.join.pairsOf(db.Statement)
		if err != nil {
			_ = db.AddError(err)
			return
		}
		for _, pr := range pairs {
			if err := op.join.contribute(op.deltas, pr, +1, op.live); err != nil {
				_ = db.AddError(err)
				return
			}
		}
	}
	if op.paired {
		db.RowsAffected = op.inserted // what was inserted, not what the stand-in statement said
		if r := db.Statement.Result; r != nil {
			r.RowsAffected = op.inserted
		}
	}
	if err := p.applyDeltas(db, op.deltas); err != nil {
		_ = db.AddError(fmt.Errorf("slotted: counting new rows of %s: %w", op.join.table, err))
	}
}

// joinBeforeChange locks and reads the join rows a DELETE removes, and
// restricts it to them. An UPDATE of a pair column is refused: gorm never
// issues one, and a join row that changes its pair is a delete and an insert.
//
//	SELECT post_tags.post_id, post_tags.tag_id FROM post_tags WHERE <its conditions> ORDER BY post_id, tag_id LIMIT 10001
//	SELECT post_id, tag_id, CASE WHEN (<its conditions>) THEN 1 ELSE 0 END FROM post_tags
//	  WHERE (post_id = 1 AND tag_id IN (2,3)) OR ... ORDER BY post_id, tag_id FOR UPDATE
func (p *Caches) joinBeforeChange(db *gorm.DB, jc *joinCaches) {
	s := db.Statement
	if !slices.Contains(s.BuildClauses, "DELETE") {
		if cols, known := assignedColumns(s); !known || cols[jc.cols[0]] || cols[jc.cols[1]] {
			_ = db.AddError(fmt.Errorf("%w: an update of %s may change %s or %s: delete and create join rows instead (update other columns by name)", errs.ErrUnsupportedModel, jc.table, jc.cols[0], jc.cols[1]))
		}
		return
	}
	if deleteLimited(s) {
		_ = db.AddError(fmt.Errorf("%w: a DELETE of %s with LIMIT (MySQL): the join rows it removes cannot be told before it runs; delete them by their columns", errs.ErrUnsupportedModel, jc.table))
		return
	}
	var conds []clause.Expression
	if w, ok := s.Clauses["WHERE"].Expression.(clause.Where); ok && len(w.Exprs) > 0 {
		conds = append(conds, clause.AndConditions(w))
	}
	var keyed []pair
	fa, fb := s.Schema.LookUpField(jc.cols[0]), s.Schema.LookUpField(jc.cols[1])
	addKeys := func(v reflect.Value) {
		meta.EachStruct(v, func(r reflect.Value) {
			a, za := fa.ValueOf(s.Context, r)
			b, zb := fb.ValueOf(s.Context, r)
			if !za && !zb {
				keyed = append(keyed, pair{vals: [2]any{a, b}})
			}
		})
	}
	addKeys(s.ReflectValue)
	if s.Model != nil && s.Model != s.Dest {
		addKeys(reflect.ValueOf(s.Model))
	}
	if len(keyed) > 0 {
		conds = append(conds, jc.pairsCondition(keyed))
	}
	if len(conds) == 0 && !db.AllowGlobalUpdate {
		return // gorm refuses it (ErrMissingWhereClause)
	}
	if beginOwnTx(db); db.Error != nil {
		return
	}
	op := &cacheOp{join: jc, deltas: deltas{}}
	scope := func(q *gorm.DB) *gorm.DB {
		for _, c := range conds {
			q = q.Where(c)
		}
		return q
	}
	var recheck clause.Expression
	var cands []pair
	restrict := false
	if p.dialect.LockingReads {
		var err error
		cands, err = p.readPairs(db, jc, nil, nil, func(q *gorm.DB) *gorm.DB { return scope(q).Limit(restrictLimit + 1) })
		if err != nil {
			_ = db.AddError(err)
			return
		}
		if len(cands) <= restrictLimit {
			restrict = true
			if len(conds) > 0 {
				recheck = clause.And(conds...)
			}
			if len(cands) == 0 {
				scope = nil
			} else {
				scope = func(q *gorm.DB) *gorm.DB { return q.Where(jc.pairsCondition(cands)) }
			}
		}
	}
	if restrict && len(jc.fars) > 0 && scope != nil {
		// The far-side rows before the pairs, as every writer of join rows takes them.
		var err error
		if op.live, err = p.readAlive(db, jc, cands, true); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	var locked []pair
	if scope != nil {
		var err error
		if locked, err = p.readPairs(db, jc, recheck, p.readLock(false), scope); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	if !restrict && len(jc.fars) > 0 && len(locked) > 0 {
		// Past restrictLimit pairs the statement is not restricted, and the
		// far rows are read after the pairs are locked: the reverse of every
		// other writer's order, so such a delete can deadlock with a
		// concurrent soft delete of a far row (a lock conflict, retried).
		var err error
		if op.live, err = p.readAlive(db, jc, locked, true); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	for _, pr := range locked {
		if err := jc.contribute(op.deltas, pr, -1, op.live); err != nil {
			_ = db.AddError(err)
			return
		}
	}
	if restrict {
		if len(locked) == 0 {
			s.AddClause(clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "1 = 0"}}})
		} else {
			s.AddClause(clause.Where{Exprs: []clause.Expression{jc.pairsCondition(locked)}})
		}
	}
	db.InstanceSet(cacheOpKey, op)
}

// readPairs selects join rows (scope), in key order, FOR UPDATE when locking;
// with recheck, only the rows that match it.
func (p *Caches) readPairs(db *gorm.DB, jc *joinCaches, recheck clause.Expression, lock clause.Interface, scope func(*gorm.DB) *gorm.DB) ([]pair, error) {
	ca := clause.Column{Table: jc.table, Name: jc.cols[0]}
	cb := clause.Column{Table: jc.table, Name: jc.cols[1]}
	sel, vars := "?, ?", []any{ca, cb}
	if recheck != nil {
		sel += ", CASE WHEN (?) THEN 1 ELSE 0 END"
		vars = append(vars, recheck)
	}
	q := session.WithoutFill(session.Routed(db)).Table(jc.table).Select(sel, vars...)
	q = scope(q).Order(clause.OrderBy{Columns: []clause.OrderByColumn{{Column: ca}, {Column: cb}}})
	if lock != nil {
		q = q.Clauses(lock)
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pair
	var matches int64
	dest := []any{nullable(jc.fields[0]), nullable(jc.fields[1])}
	if recheck != nil {
		dest = append(dest, &matches)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if recheck != nil && matches == 0 {
			continue // left the statement's conditions before it was locked: not deleted, not counted
		}
		pr, err := pairOf(scanned(dest[0]), scanned(dest[1]))
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, rows.Err()
}

// pairsCondition selects the given pairs, grouped by the first column:
// (post_id = 1 AND tag_id IN (2,3)) OR (post_id = 4 AND tag_id IN (5)).
// Each group is an equality on the primary key's prefix, so the rows are
// read by the index without gap locks.
func (jc *joinCaches) pairsCondition(pairs []pair) clause.Expression {
	ca := clause.Column{Table: jc.table, Name: jc.cols[0]}
	cb := clause.Column{Table: jc.table, Name: jc.cols[1]}
	var ors []clause.Expression
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && reflect.DeepEqual(pairs[j].vals[0], pairs[i].vals[0]) {
			j++
		}
		bs := make([]any, 0, j-i)
		for _, pr := range pairs[i:j] {
			bs = append(bs, pr.vals[1])
		}
		ors = append(ors, clause.And(clause.Eq{Column: ca, Value: pairs[i].vals[0]}, clause.IN{Column: cb, Values: bs}))
		i = j
	}
	if len(ors) == 1 {
		return ors[0]
	}
	return clause.Or(ors...)
}

// cascadeJoinRows deletes, through gorm and counted, the join rows of the
// records a hard DELETE of a many-to-many side removes. gorm leaves them
// (a foreign key constraint then refuses the DELETE), and the far side's
// counts would keep them.
//
//	DELETE FROM post_tags WHERE post_tags.post_id IN (SELECT posts.id FROM posts WHERE <the DELETE's conditions>)
func (p *Caches) cascadeJoinRows(db *gorm.DB, links []sideLink) {
	s := db.Statement
	if !s.Unscoped && softDeleteField(s.Schema) != nil {
		return // a soft delete keeps its join rows (WithDeleted is required)
	}
	if deleteLimited(s) {
		_ = db.AddError(fmt.Errorf("%w: a hard DELETE of %s with LIMIT (MySQL): the join rows of the records it removes cannot be told before it runs; delete by key or condition", errs.ErrUnsupportedModel, s.Schema.Name))
		return
	}
	key := links[0].key
	var conds []clause.Expression
	keysOf := func(v reflect.Value) {
		var keys []any
		meta.EachStruct(v, func(r reflect.Value) {
			if k, zero := key.ValueOf(s.Context, r); !zero {
				keys = append(keys, k)
			}
		})
		if len(keys) > 0 {
			conds = append(conds, clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: key.DBName}, Values: keys})
		}
	}
	keysOf(s.ReflectValue)
	if s.Model != nil && s.Model != s.Dest {
		keysOf(reflect.ValueOf(s.Model))
	}
	where, hasWhere := s.Clauses["WHERE"]
	if !hasWhere && len(conds) == 0 && !db.AllowGlobalUpdate {
		return
	}
	// The join rows go with the side's DELETE, in its transaction: a DELETE
	// that fails after them (a foreign key) takes them back.
	if beginOwnTx(db); db.Error != nil {
		return
	}
	for _, l := range links {
		sub := session.WithoutFill(session.Routed(db)).Model(reflect.New(s.Schema.ModelType).Interface()).Unscoped().
			Select("?", clause.Column{Table: clause.CurrentTable, Name: key.DBName})
		if hasWhere {
			sub = sub.Clauses(where.Expression)
		}
		for _, c := range conds {
			sub = sub.Where(c)
		}
		err := session.Routed(db).Table(l.join.Table).
			Where(clause.Expr{SQL: "? IN (?)", Vars: []any{clause.Column{Table: l.join.Table, Name: l.col}, sub}}).
			Delete(reflect.New(l.join.ModelType).Interface()).Error
		if err != nil {
			_ = db.AddError(fmt.Errorf("slotted: deleting the %s rows of %s: %w", l.join.Table, s.Schema.Name, err))
			return
		}
	}
}

// deleteLimited reports a DELETE whose LIMIT the dialect builds (MySQL): it
// removes some of the rows its conditions match, which ones known only to
// the server.
func deleteLimited(s *gorm.Statement) bool {
	_, has := s.Clauses["LIMIT"]
	return has && slices.Contains(s.BuildClauses, "LIMIT")
}

// sidesOf returns the join tables a model's hard delete empties, or nil.
func (p *Caches) sidesOf(typ reflect.Type) []sideLink {
	return linksOf[sideLink](p, &p.caches.sides, typ)
}

// linksOf loads a model's many-to-many links from one of the registry's maps;
// models stop at one atomic load while no many-to-many cache is declared.
func linksOf[L any](p *Caches, m *sync.Map, typ reflect.Type) []L {
	if !p.caches.joins.Load() {
		return nil
	}
	if v, ok := m.Load(typ); ok {
		return v.([]L)
	}
	return nil
}

// countJoinRows counts the join rows of the parents keys (Fix).
//
//	SELECT post_tags.tag_id, COUNT(*) FROM post_tags WHERE post_tags.tag_id IN (...) GROUP BY post_tags.tag_id
func (p *Caches) countJoinRows(tx *gorm.DB, c *counterCache, keys []any, into deltas) error {
	table := c.child.schema.Table
	col := clause.Column{Table: table, Name: c.joinCol}
	q := session.WithoutFill(session.Routed(tx)).Table(table).
		Select("?, COUNT(*)", col).
		Where(clause.IN{Column: col, Values: keys}).
		Clauses(clause.GroupBy{Columns: []clause.Column{col}})
	if f := c.far; f != nil {
		ft := f.schema.Table
		q = q.Joins("JOIN ? ON ? = ?", clause.Table{Name: ft}, clause.Column{Table: ft, Name: f.key.DBName}, clause.Column{Table: table, Name: f.col}).
			Where("? IS NULL", clause.Column{Table: ft, Name: f.deleted.DBName})
	}
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	return into.addRows(rows, c, c.weight)
}
