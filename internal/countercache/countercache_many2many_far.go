package countercache

import (
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/tables"
)

// Soft-deleted far sides: a tag's post count leaves out the join rows of
// soft-deleted posts (unless WithDeleted), as a has-many cache leaves out
// soft-deleted children. A join row counts while its far-side row is alive:
//
//	a join row inserted or deleted    counts (+1/-1) only if its post is alive, read FOR SHARE
//	                                  (by key, in key order) before the pairs are written
//	a post soft-deleted or restored   its rows are read FOR UPDATE by key before the UPDATE and
//	(any UPDATE of deleted_at)        again after; for each post whose state changed, its join
//	                                  rows are read (FOR SHARE) and count -1 / +1
//	an upsert of posts (Save's        the same, its rows read by the keys of its structs
//	fallback, ON CONFLICT UPDATE ALL)
//
// Every change of a post's join rows takes the post's row lock (shared) before
// it writes, and a soft delete or restore holds it exclusively until it
// commits, so each join row is counted by exactly one of them: locks go far
// rows -> join rows -> counter rows.

// farSide is the soft-deletable side a cache's join rows point at.
type farSide struct {
	schema  *schema.Schema
	key     *schema.Field
	deleted *schema.Field
	at      int    // its column's position in the pair
	col     string // its column in the join table
}

// farLink names, for a far-side model, a join table whose caches watch it.
type farLink struct {
	table string
	at    int
	far   *farSide
}

// liveness holds, per pair position, which far-side rows (by record id) are
// alive; nil positions are not watched.
type liveness [2]map[string]bool

func (c *counterCache) counts(pr pair, live liveness) bool {
	if c.far == nil {
		return true
	}
	return live[c.far.at][pr.ids[c.far.at]]
}

// readAlive reads the far-side rows of pairs, FOR SHARE when locking, in
// key order: which are alive (not soft-deleted).
//
//	SELECT posts.id, posts.deleted_at FROM posts WHERE posts.id IN (...) ORDER BY posts.id FOR SHARE
func (p *Caches) readAlive(db *gorm.DB, jc *joinCaches, pairs []pair, lock bool) (liveness, error) {
	var live liveness
	for _, f := range jc.fars {
		var keys []any
		seen := map[string]bool{}
		for _, pr := range pairs {
			if pr.ok[f.at] && !seen[pr.ids[f.at]] {
				seen[pr.ids[f.at]] = true
				keys = append(keys, pr.vals[f.at])
			}
		}
		live[f.at] = map[string]bool{}
		if len(keys) == 0 {
			continue
		}
		// Unscoped: a soft-deleted row is locked too, or a restore would not wait.
		if err := p.readFar(db, f, lock, false, live[f.at], func(q *gorm.DB) *gorm.DB {
			return q.Unscoped().Where(clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: f.key.DBName}, Values: keys})
		}, nil); err != nil {
			return live, err
		}
	}
	return live, nil
}

// readFar reads far-side rows (scope, soft-deleted ones too unless scoped),
// in key order, locked (shared, or exclusive when update): alive by record
// id into live, and their keys into keys when given.
func (p *Caches) readFar(db *gorm.DB, f *farSide, lock, update bool, live map[string]bool, scope func(*gorm.DB) *gorm.DB, keys *[]any) error {
	key := clause.Column{Table: clause.CurrentTable, Name: f.key.DBName}
	q := session.WithoutFill(session.Routed(db)).Model(reflect.New(f.schema.ModelType).Interface()).
		Select("?, ?", key, clause.Column{Table: clause.CurrentTable, Name: f.deleted.DBName})
	q = scope(q).Order(clause.OrderByColumn{Column: key})
	if lock && p.dialect.LockingReads {
		q = q.Clauses(p.lockingClause(!update))
	}
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	k, d := nullable(f.key), nullable(f.deleted)
	for rows.Next() {
		if err := rows.Scan(k, d); err != nil {
			return err
		}
		id, ok, err := fkID(scanned(k))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		del := scanned(d)
		live[id] = del == nil || reflect.ValueOf(del).IsZero()
		if keys != nil {
			*keys = append(*keys, scanned(k))
		}
	}
	return rows.Err()
}

// farsOf returns the join tables whose caches watch a model's soft delete.
func (p *Caches) farsOf(typ reflect.Type) []farLink { return linksOf[farLink](p, &p.caches.fars, typ) }

const farOpKey = "slotted:far_op"

type farOp struct {
	links  []farLink
	keys   []any
	before map[string]bool
}

// farBeforeChange locks and reads the far-side rows an UPDATE of deleted_at
// or a soft delete changes, and restricts the statement to them.
func (p *Caches) farBeforeChange(db *gorm.DB, links []farLink, deleting bool) {
	s := db.Statement
	f := links[0].far
	if deleting && s.Unscoped {
		return // a hard delete: its join rows are deleted (cascadeJoinRows), counted if alive
	}
	if !deleting {
		if cols, known := assignedColumns(s); known && !cols[f.deleted.DBName] {
			return
		}
	}
	var conds []clause.Expression
	var keys []any
	meta.EachStruct(s.ReflectValue, func(r reflect.Value) {
		if k, zero := f.key.ValueOf(s.Context, r); !zero {
			keys = append(keys, k)
		}
	})
	if s.Model != nil && s.Model != s.Dest {
		meta.EachStruct(reflect.ValueOf(s.Model), func(r reflect.Value) {
			if k, zero := f.key.ValueOf(s.Context, r); !zero {
				keys = append(keys, k)
			}
		})
	}
	if len(keys) > 0 {
		conds = append(conds, clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: f.key.DBName}, Values: keys})
	}
	where, hasWhere := s.Clauses["WHERE"]
	if !hasWhere && len(conds) == 0 && !db.AllowGlobalUpdate {
		return
	}
	if beginOwnTx(db); db.Error != nil {
		return
	}
	op := &farOp{links: links, before: map[string]bool{}}
	err := p.readFar(db, f, true, true, op.before, func(q *gorm.DB) *gorm.DB {
		if s.Unscoped {
			q = q.Unscoped()
		}
		if hasWhere {
			q = q.Clauses(where.Expression)
		}
		for _, c := range conds {
			q = q.Where(c)
		}
		return q
	}, &op.keys)
	if err != nil {
		_ = db.AddError(err)
		return
	}
	if len(op.keys) <= restrictLimit {
		s.AddClause(clause.Where{Exprs: []clause.Expression{clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: f.key.DBName}, Values: op.keys}}})
	}
	db.InstanceSet(farOpKey, op)
}

// farBeforeUpsert locks and reads the far-side rows an upsert may update
// (by the keys of its structs): gorm's Save of a soft-deleted record, whose
// UPDATE finds no live row, falls back to INSERT ... ON CONFLICT UPDATE ALL,
// which restores it (or soft-deletes one). farAfterChange follows.
func (p *Caches) farBeforeUpsert(db *gorm.DB, links []farLink) {
	s := db.Statement
	if oc, _ := s.Clauses["ON CONFLICT"].Expression.(clause.OnConflict); oc.DoNothing {
		return
	}
	f := links[0].far
	var keys []any
	meta.EachStruct(s.ReflectValue, func(r reflect.Value) {
		if k, zero := f.key.ValueOf(s.Context, r); !zero {
			keys = append(keys, k)
		}
	})
	if len(keys) == 0 {
		return // new rows only: no join row names them yet
	}
	if beginOwnTx(db); db.Error != nil {
		return
	}
	op := &farOp{links: links, before: map[string]bool{}}
	for chunk := range slices.Chunk(keys, tables.LoadChunk) {
		err := p.readFar(db, f, true, true, op.before, func(q *gorm.DB) *gorm.DB {
			return q.Unscoped().Where(clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: f.key.DBName}, Values: chunk})
		}, &op.keys)
		if err != nil {
			_ = db.AddError(err)
			return
		}
	}
	db.InstanceSet(farOpKey, op)
}

// farAfterChange reads the far-side rows again and moves the counts of the
// join rows of those whose state changed.
//
//	SELECT post_tags.tag_id, post_tags.post_id FROM post_tags WHERE post_tags.post_id IN (<changed>) ORDER BY ... FOR SHARE
func (p *Caches) farAfterChange(db *gorm.DB) {
	v, ok := db.InstanceGet(farOpKey)
	if !ok || db.Error != nil {
		return
	}
	op := v.(*farOp)
	if len(op.keys) == 0 {
		return
	}
	f := op.links[0].far
	after := map[string]bool{}
	for chunk := range slices.Chunk(op.keys, tables.LoadChunk) {
		err := p.readFar(db, f, false, false, after, func(q *gorm.DB) *gorm.DB {
			return q.Unscoped().Where(clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: f.key.DBName}, Values: chunk})
		}, nil)
		if err != nil {
			_ = db.AddError(err)
			return
		}
	}
	var changed []any
	for _, k := range op.keys {
		id, _, _ := fkID(k)
		if after[id] != op.before[id] {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return
	}
	d := deltas{}
	for _, l := range op.links {
		v, ok := p.caches.byJoin.Load(l.table)
		if !ok {
			continue
		}
		jc := v.(*joinCaches)
		col := clause.Column{Table: jc.table, Name: jc.cols[l.at]}
		for chunk := range slices.Chunk(changed, tables.LoadChunk) {
			pairs, err := p.readPairs(db, jc, nil, p.readLock(true), func(q *gorm.DB) *gorm.DB { return q.Where(clause.IN{Column: col, Values: chunk}) })
			if err != nil {
				_ = db.AddError(err)
				return
			}
			for _, pr := range pairs {
				sign := int64(-1)
				if after[pr.ids[l.at]] {
					sign = +1
				}
				for _, c := range jc.caches {
					if c.far == nil || c.far.at != l.at || !pr.ok[c.joinAt] {
						continue
					}
					if err := d.add(c, pr.ids[c.joinAt], sign, c.weight); err != nil {
						_ = db.AddError(err)
						return
					}
				}
			}
		}
	}
	if err := p.applyDeltas(db, d); err != nil {
		_ = db.AddError(fmt.Errorf("slotted: counting the join rows of changed %s: %w", f.schema.Name, err))
	}
}
