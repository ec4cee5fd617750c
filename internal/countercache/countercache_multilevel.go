package countercache

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/write"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/tables"
)

// Multi-level counter caches (counter_culture's [:user, :company]): reviews
// counted on their company through their user, as a chain of declarations.
// The first level is an ordinary counter cache on the intermediate model; the
// next adds up that counter over the intermediate's rows, through its own
// relationship:
//
//	type Company struct { ID uint; Users []User;     Reviews int64 `gorm:"-" slotted:"reviews"` }
//	type User    struct { ID uint; CompanyID uint;   Reviews []Review; ReviewCount int64 `gorm:"-" slotted:"reviews"` }
//	type Review  struct { ID uint; UserID uint }
//
//	slotted.CounterCache(db, &User{}, "Reviews", "reviews")                               // user ← review
//	slotted.CounterCache(db, &Company{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"}) // company ← user's counter
//
// Chains go as deep as declared (a region adding up its companies' "reviews").
//
// How each change is kept, in the child's transaction:
//   - A review's create, update, delete, soft delete or restore changes its
//     user's counter by d (as any cache). Before the upsert, the users whose
//     counter changes are read by primary key FOR SHARE (their company_id,
//     deleted_at and the company cache's conditions), and d is added to their
//     companies too: the same multi-row upsert writes both levels.
//   - A user's change (company_id, soft delete, restore, delete, a condition
//     flipping) moves the user's counter total N: the user row is locked FOR
//     UPDATE as for any child, then the counter's slot rows are locked and
//     summed, and -N / +N go to the old and new company: one delta of N, not N
//     statements. Only rows whose image changed read their total, after the
//     statement, unless the statement may save nested children: those are
//     counted up the chain by themselves, so the total is read before it
//     (contributeTotals).
//
// Why it is exact: a review's transaction holds its user's row in share mode
// from before it writes the user's counter until it commits, and a user's
// move holds the row exclusively from before it reads the counter. So a move
// reads a total that includes every committed review change of that user and
// no uncommitted one, and a review change that waited for the move reads the
// user's new company. The locks are taken in one order: child rows, then the
// intermediate rows (by primary key, ascending, level by level), then slot
// rows in (record_type, record_id) order. Reading a total locks all its slot
// rows by exact key (they are upserted first), so no gap or next-key lock is
// held on a neighbouring counter's rows.

// sumCounterOf checks a SumCounter option and sets cc.through.
func (p *Caches) sumCounterOf(db *gorm.DB, cc *counterCache, child *schema.Schema, spec Spec) error {
	if spec.Sum != "" {
		return fmt.Errorf("%w: SumCounter %q and Sum %q cannot be combined", errs.ErrInvalidConfig, spec.SumCounter, spec.Sum)
	}
	if len(child.PrimaryFields) != 1 {
		// Its totals are read and propagated by record_id and joined to the
		// level below by one key column (throughQuery).
		return fmt.Errorf("%w: SumCounter %q: %s has a composite primary key; adding up an intermediate's counter needs a single-column key", errs.ErrUnsupportedModel, spec.SumCounter, child.Name)
	}
	m, err := p.models.OfSchema(db, child)
	if err != nil {
		return err
	}
	c, err := m.Counter(spec.SumCounter)
	if err != nil {
		return err
	}
	if p.cacheOf(c) == nil {
		return fmt.Errorf("%w: SumCounter %q: counter %q of %s is not a counter cache (declare it first)", errs.ErrInvalidConfig, spec.SumCounter, c.Name, child.Name)
	}
	if p.cacheOf(c).joinCol != "" {
		return fmt.Errorf("%w: SumCounter(%q): counter %q of %s counts many-to-many join rows; adding it up is not supported (Fix could not recount it: its recount through the levels reads child rows by foreign key, not a join table)", errs.ErrInvalidConfig, spec.SumCounter, c.Name, child.Name)
	}
	cc.through = c
	p.caches.summed.Store(true) // before registration: a failed one only costs the lookups
	return nil
}

// summedBy returns the child caches of the model whose counter c is, when
// one of them adds c up (SumCounter).
func (p *Caches) summedBy(c *counterCache) *childCaches {
	cc := p.childCachesOf(c.parent.Type)
	if cc == nil || !slices.Contains(cc.totals, c.counter) {
		return nil
	}
	return cc
}

// propagate adds to d, level by level, the changes that the caches adding up
// a changed counter (SumCounter) receive: each intermediate record is read FOR
// SHARE, in primary-key order, and its change is counted like a row of its own.
func (p *Caches) propagate(db *gorm.DB, d deltas) error {
	if !p.caches.summed.Load() {
		return nil
	}
	todo := d
	for depth := 0; len(todo) > 0; depth++ {
		if depth > 32 {
			return fmt.Errorf("%w: SumCounter chains deeper than 32 levels", errs.ErrInvalidConfig)
		}
		type level struct {
			cc      *childCaches
			parent  *meta.Model
			changes map[*meta.Counter]map[string]int64
		}
		levels := map[*childCaches]*level{}
		for k, n := range todo {
			if n == 0 {
				continue
			}
			cc := p.summedBy(k.c)
			if cc == nil {
				continue
			}
			l := levels[cc]
			if l == nil {
				l = &level{cc: cc, parent: k.c.parent, changes: map[*meta.Counter]map[string]int64{}}
				levels[cc] = l
			}
			if l.changes[k.c.counter] == nil {
				l.changes[k.c.counter] = map[string]int64{}
			}
			l.changes[k.c.counter][k.id] = n
		}
		next := deltas{}
		order := slices.SortedFunc(maps.Values(levels), func(a, b *level) int { return cmp.Compare(a.parent.Table, b.parent.Table) })
		for _, l := range order {
			ids := map[string]bool{}
			for _, byID := range l.changes {
				for id := range byID {
					ids[id] = true
				}
			}
			var keys []any
			for _, id := range slices.SortedFunc(maps.Keys(ids), compareIDs) {
				if k, ok := l.parent.Key.Parse(id); ok {
					keys = append(keys, k)
				}
			}
			op := &cacheOp{cc: l.cc, deltas: next, share: true, propagate: l.changes}
			for chunk := range slices.Chunk(keys, tables.LoadChunk) {
				byKey := func(q *gorm.DB) *gorm.DB {
					return q.Where(keyIn(l.cc, chunk)).Order(l.cc.keyOrder())
				}
				if err := p.readImages(db, l.cc, op, +1, true, byKey); err != nil {
					return err
				}
			}
		}
		for k, n := range next {
			sum, ok := write.MergeDelta(d[k], n)
			if !ok {
				return errs.ErrOverflow
			}
			d[k] = sum
		}
		todo = next
	}
	return nil
}

// compareIDs orders record ids as their numbers where both are numbers, so
// that intermediate rows are locked in primary-key order.
func compareIDs(a, b string) int {
	if len(a) != len(b) && isDigits(a) && isDigits(b) {
		return cmp.Compare(len(a), len(b))
	}
	return cmp.Compare(a, b)
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// pendingRow is a "before" image waiting for its "after" one, with the
// counters' totals when they were read before the statement.
type pendingRow struct {
	img    image
	totals []int64
}

// contributeTotals counts images of rows (keys) with the totals of the
// counters SumCounter caches add up: the changes being propagated, or the
// counters' stored totals, read under the lock of every slot row.
//
// An update or upsert keeps its "before" images until the "after" ones are
// read: a row whose image did not change counts -x and +x, so only the others
// count, and (when totalsLater) only they lock and read their totals. A
// statement that may save nested children (gorm's association saving) reads
// the totals before it, because those children change the totals in between
// and are counted up the chain by themselves; a row that was not there before
// brings a total of 0 for the same reason.
func (p *Caches) contributeTotals(db *gorm.DB, cc *childCaches, op *cacheOp, sign int64, imgs []image, keys []any) error {
	ids := make([]string, len(keys))
	for i, k := range keys {
		id, _, err := fkID(k)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	switch {
	case op.propagate != nil || !op.paired:
		return p.countWithTotals(db, cc, op, sign, imgs, ids)
	case sign < 0:
		var totals map[meta.Ref]int64
		if !op.totalsLater {
			var err error
			if totals, err = p.lockedTotals(db, cc.totals, ids); err != nil {
				return err
			}
		}
		if op.before == nil {
			op.before = make(map[string]pendingRow, len(imgs))
		}
		for i, img := range imgs {
			row := pendingRow{img: img}
			if totals != nil {
				row.totals = make([]int64, len(cc.totals))
				for j, c := range cc.totals {
					row.totals[j] = totals[meta.Ref{Type: c.RecordType, ID: ids[i]}]
				}
			}
			op.before[ids[i]] = row
		}
		return nil
	}
	type change struct {
		id            string
		before, after image
		totals        []int64
	}
	var changed []change
	var fresh []image
	for i, img := range imgs {
		b, ok := op.before[ids[i]]
		delete(op.before, ids[i])
		switch {
		case !ok:
			img.totals = make([]int64, len(cc.totals)) // a row that was not there: 0
			fresh = append(fresh, img)
		case !sameImage(b.img, img):
			changed = append(changed, change{id: ids[i], before: b.img, after: img, totals: b.totals})
		}
	}
	if len(changed) > 0 && changed[0].totals == nil { // totalsLater: read once, for the rows that changed
		ids := make([]string, len(changed))
		for i, c := range changed {
			ids[i] = c.id
		}
		totals, err := p.lockedTotals(db, cc.totals, ids)
		if err != nil {
			return err
		}
		for i := range changed {
			changed[i].totals = make([]int64, len(cc.totals))
			for j, c := range cc.totals {
				changed[i].totals[j] = totals[meta.Ref{Type: c.RecordType, ID: changed[i].id}]
			}
		}
	}
	before, after := make([]image, 0, len(changed)), fresh
	for _, c := range changed {
		c.before.totals, c.after.totals = c.totals, c.totals
		before, after = append(before, c.before), append(after, c.after)
	}
	if err := p.countWithTotals(db, cc, op, -1, before, nil); err != nil {
		return err
	}
	return p.countWithTotals(db, cc, op, +1, after, nil)
}

// countBefore counts the removal of the "before" images that no "after"
// image matched (a row whose primary key the update changed).
func (p *Caches) countBefore(db *gorm.DB, op *cacheOp) error {
	if len(op.before) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(op.before))
	imgs := make([]image, len(ids))
	known := true
	for i, id := range ids {
		imgs[i] = op.before[id].img
		imgs[i].totals = op.before[id].totals
		known = known && imgs[i].totals != nil
	}
	op.before = nil
	if known {
		return p.countWithTotals(db, op.cc, op, -1, imgs, nil)
	}
	return p.countWithTotals(db, op.cc, op, -1, imgs, ids)
}

// nestedSaves reports whether a statement may save associations of its
// records (gorm's association saving): a relationship field is set on one of
// them and the statement does not omit associations.
func nestedSaves(s *gorm.Statement) bool {
	if slices.Contains(s.Omits, clause.Associations) || s.Schema == nil {
		return false
	}
	found := false
	meta.EachStruct(s.ReflectValue, func(v reflect.Value) {
		if found || v.Type() != s.Schema.ModelType {
			return
		}
		for _, rel := range s.Schema.Relationships.Relations {
			if rel.Field == nil || rel.Field.Schema != s.Schema {
				continue // gorm lists some relationships of other models here too
			}
			if _, zero := rel.Field.ValueOf(s.Context, v); !zero {
				found = true
				return
			}
		}
	})
	return found
}

// sameImage reports whether two images of a row count the same in every cache.
func sameImage(a, b image) bool {
	return a.alive == b.alive && slices.Equal(a.flags, b.flags) &&
		slices.EqualFunc(a.fks, b.fks, sameValue) && slices.EqualFunc(a.sums, b.sums, sameValue)
}

func sameValue(a, b any) bool { return reflect.DeepEqual(a, b) }

// countWithTotals contributes images. With ids, their totals are read (or,
// when propagating, taken from the changes) for those records; without, the
// images carry them.
func (p *Caches) countWithTotals(db *gorm.DB, cc *childCaches, op *cacheOp, sign int64, imgs []image, ids []string) error {
	if len(imgs) == 0 {
		return nil
	}
	var totals map[meta.Ref]int64
	if ids != nil && op.propagate == nil {
		var err error
		if totals, err = p.lockedTotals(db, cc.totals, ids); err != nil {
			return err
		}
	}
	for i, img := range imgs {
		if ids != nil {
			img.totals = make([]int64, len(cc.totals))
			for j, c := range cc.totals {
				if op.propagate != nil {
					img.totals[j] = op.propagate[c][ids[i]]
				} else {
					img.totals[j] = totals[meta.Ref{Type: c.RecordType, ID: ids[i]}]
				}
			}
		}
		img.propagating = op.propagate != nil
		if err := cc.contribute(op.deltas, img, sign, reflect.Value{}); err != nil {
			return err
		}
	}
	return nil
}

// lockedTotals reads the totals of counters of the records ids. Every slot
// row is upserted first (as Fix does) and then read FOR UPDATE by its exact
// key: a writer of these counters waits for the commit, and InnoDB takes no
// gap lock next to another record's rows.
func (p *Caches) lockedTotals(db *gorm.DB, counters []*meta.Counter, ids []string) (map[meta.Ref]int64, error) {
	var rows []tables.Counter
	for _, c := range counters {
		for _, id := range ids {
			if id == "" {
				continue
			}
			for slot := range c.Slots {
				rows = append(rows, tables.Counter{RecordType: tables.Key(c.RecordType), RecordID: tables.Key(id), Slot: int32(slot)})
			}
		}
	}
	slices.SortFunc(rows, func(a, b tables.Counter) int {
		return cmp.Or(cmp.Compare(a.RecordType, b.RecordType), cmp.Compare(a.RecordID, b.RecordID), cmp.Compare(a.Slot, b.Slot))
	})
	rows = slices.CompactFunc(rows, func(a, b tables.Counter) bool { return tables.SameCounter(a, b) && a.Slot == b.Slot })
	tx := session.Routed(db)
	totals := map[meta.Ref]int64{}
	for chunk := range slices.Chunk(rows, 500) {
		if p.dialect.LockingReads {
			if err := tx.Table(p.cfg.Table).Clauses(keepCountClause()).Create(&chunk).Error; err != nil {
				return nil, err
			}
		}
		var got []tables.Counter
		q := tx.Table(p.cfg.Table).Select("record_type", "record_id", "slot", "count").Where(tables.SlotsCondition(chunk))
		if p.dialect.LockingReads {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		if err := q.Find(&got).Error; err != nil {
			return nil, err
		}
		for _, r := range got {
			ref := meta.Ref{Type: string(r.RecordType), ID: string(r.RecordID)}
			sum, ok := write.MergeDelta(totals[ref], r.Count)
			if !ok {
				return nil, errs.ErrOverflow
			}
			totals[ref] = sum
		}
	}
	return totals, nil
}

// lockingClause is the locking read of images: FOR UPDATE, or the
// dialect's shared lock.
func (p *Caches) lockingClause(share bool) clause.Interface {
	if !share {
		return clause.Locking{Strength: clause.LockingStrengthUpdate}
	}
	return p.dialect.ShareLock()
}

// readLock is lockingClause where the database has locking reads, else nil
// (SQLite: its write transaction excludes every other writer already).
func (p *Caches) readLock(share bool) clause.Interface {
	if !p.dialect.LockingReads {
		return nil
	}
	return p.lockingClause(share)
}

// countThrough counts for Fix what a SumCounter cache should hold: the
// source rows at the bottom of the chain, joined up through each
// intermediate table, grouped by the parent's foreign key.
//
//	SELECT users.company_id AS slotted_fk, COALESCE(SUM(slotted_l1.slotted_n), 0) AS slotted_n FROM users
//	  JOIN (SELECT reviews.user_id AS slotted_fk, COUNT(*) AS slotted_n FROM reviews
//	        WHERE reviews.user_id IN (SELECT users.id FROM users WHERE users.company_id IN (...))
//	          [AND <review Where>] AND reviews.deleted_at IS NULL GROUP BY reviews.user_id) slotted_l1
//	    ON slotted_l1.slotted_fk = users.id
//	WHERE users.company_id IN (...) [AND <user Where>] AND users.deleted_at IS NULL GROUP BY users.company_id
//
// Each level's conditions stay in its own SELECT, where an unqualified column
// names that level's table. The weights multiply in Go.
func (p *Caches) countThrough(tx *gorm.DB, c *counterCache, keys []any, into deltas) error {
	q, weight, err := p.throughQuery(tx, c, func(fk clause.Column) clause.Expression { return clause.IN{Column: fk, Values: keys} }, 1)
	if err != nil {
		return err
	}
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	return into.addRows(rows, c, weight)
}

// throughQuery selects (slotted_fk, slotted_n) per foreign key value of c's
// children that filter admits: the unweighted count or sum at the bottom of
// the chain. weight is the product of the chain's weights.
func (p *Caches) throughQuery(tx *gorm.DB, c *counterCache, filter func(clause.Column) clause.Expression, depth int) (*gorm.DB, int64, error) {
	if depth > 32 {
		return nil, 0, fmt.Errorf("%w: SumCounter chains deeper than 32 levels", errs.ErrInvalidConfig)
	}
	model := reflect.New(c.child.schema.ModelType).Interface()
	fk := clause.Column{Table: clause.CurrentTable, Name: c.fk.DBName}
	q := session.WithoutFill(session.Routed(tx)).Model(model)
	weight := c.weight
	if c.through == nil {
		agg, vars := "COUNT(*)", []any{fk}
		if c.sum != nil {
			agg = "COALESCE(SUM(?), 0)"
			vars = append(vars, clause.Column{Table: clause.CurrentTable, Name: c.sum.DBName})
		}
		q = q.Select("? AS slotted_fk, "+agg+" AS slotted_n", vars...)
	} else {
		lower := p.cacheOf(c.through)
		if lower == nil {
			return nil, 0, fmt.Errorf("%w: SumCounter: %q is no longer a counter cache", errs.ErrInvalidConfig, c.through.Name)
		}
		key := clause.Column{Table: clause.CurrentTable, Name: c.child.key.Column} // a single column: sumCounterOf refuses composite keys
		// The intermediate keys narrow the lower level's scan to its index on the foreign key.
		narrow := session.WithoutFill(session.Routed(tx)).Model(reflect.New(c.child.schema.ModelType).Interface()).Unscoped().Select("?", key).Where(filter(fk))
		inner, w, err := p.throughQuery(tx, lower, func(lfk clause.Column) clause.Expression {
			return clause.Expr{SQL: "? IN (?)", Vars: []any{lfk, narrow}}
		}, depth+1)
		if err != nil {
			return nil, 0, err
		}
		var ok bool
		if weight, ok = write.ScaleDelta(weight, w); !ok {
			return nil, 0, errs.ErrOverflow
		}
		alias := fmt.Sprintf("slotted_l%d", depth)
		q = q.Select("? AS slotted_fk, COALESCE(SUM(?), 0) AS slotted_n", fk, clause.Column{Table: alias, Name: "slotted_n"}).
			Joins("JOIN (?) "+alias+" ON ? = ?", inner, clause.Column{Table: alias, Name: "slotted_fk"}, key)
	}
	q = q.Where(filter(fk)).Clauses(clause.GroupBy{Columns: []clause.Column{fk}})
	if c.where != nil {
		q = q.Where(*c.where)
	}
	if c.deleted {
		q = q.Unscoped()
	}
	return q, weight, nil
}
