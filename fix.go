package slotted

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/write"
)

// Drift is a counter cache whose stored total differs from its children.
type Drift struct {
	Record  any    // the parent's primary key
	Counter string // the counter's tag name
	Ref     Ref
	Stored  int64 // the counter's total
	Actual  int64 // counted (or summed) from the children
}

// FixOptions configures Fix and FixAll. The zero value repairs every counter
// cache of the model.
type FixOptions struct {
	// Counters names the counter caches to recompute (tag or field names). Default: all of the model's.
	Counters []string
	// DryRun reports the drift without changing anything: the same locks and
	// counts, rolled back (to a savepoint inside your transaction).
	DryRun bool
	// BatchSize is how many parent records one transaction recomputes. Default: 100.
	BatchSize int
	// After resumes FixAll after this primary key (FixProgress.Last of an interrupted run).
	After any
	// Scope narrows FixAll's parents, e.g. func(q *gorm.DB) *gorm.DB { return q.Where("author_id = ?", 7) }.
	Scope func(*gorm.DB) *gorm.DB
	// OnDrift, when set, is called for every counter that differed (before the
	// transaction that repairs it commits; a retried batch reports again).
	OnDrift func(Drift)
	// Progress, when set, is called after every batch of FixAll.
	Progress func(FixProgress)
}

// FixProgress reports a FixAll run.
type FixProgress struct {
	Batches int // transactions committed
	Records int // parent records recomputed
	Drifted int // counters that differed from their children
	Last    any // primary key of the last parent of the last batch: FixOptions.After to resume
}

// errFixDryRun rolls a dry run's transaction back.
var errFixDryRun = errors.New("slotted: dry run")

// Fix recomputes counter caches of the given parent records (a pointer to a
// struct, or a slice of them) from their children, and returns the counters
// that differed. The records' counter fields are set to the recomputed values.
//
//	drift, err := slotted.Fix(db, &post, slotted.FixOptions{DryRun: true}) // [{Record: 42, Counter: "comments", Stored: 7, Actual: 5}]
//
// Per batch of parents, in one write transaction (READ COMMITTED; BEGIN
// IMMEDIATE on SQLite):
//
//	INSERT INTO slotted_counters (record_type, record_id, slot, count) VALUES ('posts.comments','42',0,0), ... ('posts.comments','42',99,0)
//	  ON DUPLICATE KEY UPDATE count = slotted_counters.count                  -- every slot row exists and is locked
//	SELECT record_type, record_id, slot, count FROM slotted_counters WHERE ... FOR UPDATE   -- the stored totals
//	SELECT post_id, COUNT(*) FROM comments WHERE post_id IN (42, ...) [AND <Where>] AND deleted_at IS NULL GROUP BY post_id
//	DELETE FROM slotted_counters WHERE <exactly the locked rows>
//	INSERT INTO slotted_counters ... VALUES ('posts.comments','42',0,<count>)
//
// Why it is exact while children are created and deleted: a child's change
// and its counter upsert commit together, and the upsert needs one of the
// counter's slot rows, all of which Fix holds. A child change that committed
// before Fix locked its slot is visible to the count; one still uncommitted
// when Fix counts waits for Fix's commit and then adds its delta to the
// recomputed row. So the result is the count plus exactly the changes that
// commit after Fix. This needs every writer to use the same Slots (a slot
// beyond Fix's range would not be locked) and Fix's count to see the latest
// commits: run it outside your transaction, or inside one at READ COMMITTED.
func Fix(db *gorm.DB, models any, opts FixOptions) ([]Drift, error) {
	p, err := pluginOf(db)
	if err != nil {
		return nil, err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return nil, err
	}
	caches, err := p.CachesOfModel(m, opts.Counters)
	if err != nil {
		return nil, err
	}
	if opts.BatchSize, err = batchSize(opts.BatchSize, 100, "FixOptions.BatchSize"); err != nil {
		return nil, err
	}
	rs, err := m.Records(elem, true)
	if err != nil {
		return nil, err
	}
	var all []Drift
	for ids := range slices.Chunk(rs.IDs, opts.BatchSize) {
		keys := make([]any, len(ids))
		for i, id := range ids {
			keys[i] = m.Key.Value(rs.ByID[id][0])
		}
		drifts, actual, err := p.FixRecords(db, caches, ids, keys, opts)
		if err != nil {
			return all, err
		}
		all = append(all, drifts...)
		if opts.DryRun {
			continue
		}
		for _, id := range ids {
			for _, c := range caches {
				for _, s := range rs.ByID[id] {
					c.counter.Set(s, actual[deltaKey{c, id}])
				}
			}
		}
	}
	return all, nil
}

// FixAll recomputes the counter caches of every record of model's table (or
// those Scope selects), BatchSize parents per transaction, in primary-key
// order; After resumes an interrupted run.
//
//	SELECT id FROM posts [WHERE <Scope>] AND id > ? ORDER BY id LIMIT 100   -- on the primary
//	-- then Fix's transaction for those 100 posts, and the next page
func FixAll(db *gorm.DB, model any, opts FixOptions) (FixProgress, error) {
	var prog FixProgress
	p, err := pluginOf(db)
	if err != nil {
		return prog, err
	}
	if opts.BatchSize, err = batchSize(opts.BatchSize, 100, "FixOptions.BatchSize"); err != nil {
		return prog, err
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return prog, err
	}
	caches, err := p.CachesOfModel(m, opts.Counters)
	if err != nil {
		return prog, err
	}
	err = keysetPages(db, m, opts.BatchSize, opts.After, opts.Scope, func(page reflect.Value, last any) error {
		rs, err := m.Records(page, true)
		if err != nil {
			return err
		}
		keys := make([]any, len(rs.IDs))
		for i, id := range rs.IDs {
			keys[i] = m.Key.Value(rs.ByID[id][0])
		}
		drifts, _, err := p.FixRecords(db, caches, rs.IDs, keys, opts)
		if err != nil {
			return err
		}
		prog.Batches++
		prog.Records += page.Len()
		prog.Drifted += len(drifts)
		prog.Last = last
		if opts.Progress != nil {
			opts.Progress(prog)
		}
		return nil
	})
	return prog, err
}

// CachesOfModel returns the named counter caches of a parent model (all when names is empty).
func (p *Plugin) CachesOfModel(m *meta.Model, names []string) ([]*counterCache, error) {
	counters, err := m.Selected(names)
	if err != nil {
		return nil, err
	}
	var out []*counterCache
	for _, c := range counters {
		cc := p.cacheOf(c)
		if cc == nil {
			if len(names) > 0 {
				return nil, fmt.Errorf("%w: counter %q of %s is not a counter cache (declare it with CounterCache)", ErrInvalidConfig, c.Name, m.Type)
			}
			continue
		}
		out = append(out, cc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no counter caches (declare them with CounterCache)", ErrInvalidConfig, m.Type)
	}
	return out, nil
}

// FixRecords recomputes the caches of the parents ids (record ids; keys are their
// primary key values, in the same order) in one write transaction.
func (p *Plugin) FixRecords(db *gorm.DB, caches []*counterCache, ids []string, keys []any, opts FixOptions) (drifts []Drift, actual deltas, err error) {
	var refs []Ref
	owner := map[Ref]deltaKey{}
	record := map[string]any{}
	for i, id := range ids {
		record[id] = keys[i]
		for _, c := range caches {
			r := Ref{Type: c.counter.RecordType, ID: id}
			refs = append(refs, r)
			owner[r] = deltaKey{c, id}
		}
	}
	slices.SortFunc(refs, meta.CompareRefs)
	savepoint := opts.DryRun && session.InTx(db)
	err = p.sessions.WriteTx(db, func(tx *gorm.DB) error {
		drifts, actual = nil, deltas{} // a retried attempt starts over
		if savepoint {
			if err := tx.SavePoint("slotted_fix").Error; err != nil {
				return err
			}
		}
		if p.dialect.LockingReads {
			if err := p.lockSlots(tx, owner, refs); err != nil {
				return err
			}
		}
		rows, err := p.lockRows(tx, refs)
		if err != nil {
			return err
		}
		for _, c := range caches {
			if err := p.countChildren(tx, c, keys, actual); err != nil {
				return err
			}
		}
		stored := map[Ref]int64{}
		lowest := map[Ref]int32{}
		for _, r := range rows {
			ref := Ref{Type: string(r.RecordType), ID: string(r.RecordID)}
			if _, seen := lowest[ref]; !seen {
				lowest[ref] = r.Slot
			}
			stored[ref] += r.Count
		}
		var keep []SlottedCounter
		for _, ref := range refs {
			k := owner[ref]
			if stored[ref] != actual[k] {
				d := Drift{Record: record[ref.ID], Counter: k.c.counter.Name, Ref: ref, Stored: stored[ref], Actual: actual[k]}
				drifts = append(drifts, d)
				if opts.OnDrift != nil {
					opts.OnDrift(d)
				}
			}
			if actual[k] != 0 {
				keep = append(keep, SlottedCounter{RecordType: Key(ref.Type), RecordID: Key(ref.ID), Slot: lowest[ref], Count: actual[k]})
			}
		}
		if opts.DryRun {
			if savepoint {
				if err := tx.RollbackTo("slotted_fix").Error; err != nil {
					return err
				}
				return nil
			}
			return errFixDryRun
		}
		_, err = p.replaceRows(tx, rows, keep)
		return err
	})
	if errors.Is(err, errFixDryRun) {
		err = nil
	}
	return drifts, actual, err
}

// lockSlots makes every slot row of the counters exist, locked: an upsert
// that changes nothing still takes the row lock, so no writer can add to any
// slot of these counters until Fix commits.
func (p *Plugin) lockSlots(tx *gorm.DB, owner map[Ref]deltaKey, refs []Ref) error {
	var rows []SlottedCounter
	for _, r := range refs {
		for slot := range owner[r].c.counter.Slots {
			rows = append(rows, SlottedCounter{RecordType: Key(r.Type), RecordID: Key(r.ID), Slot: int32(slot)})
		}
	}
	for chunk := range slices.Chunk(rows, 500) {
		if err := tx.Table(p.cfg.Table).Clauses(keepCountClause()).Create(&chunk).Error; err != nil {
			return err
		}
	}
	return nil
}

// countChildren counts (or sums) the live children of the parents keys that
// match the cache's condition, by foreign key.
//
//	SELECT comments.post_id, COUNT(*) FROM comments WHERE comments.post_id IN (...) [AND <Where>]
//	  AND comments.deleted_at IS NULL GROUP BY comments.post_id
func (p *Plugin) countChildren(tx *gorm.DB, c *counterCache, keys []any, into deltas) error {
	if c.through != nil {
		return p.countThrough(tx, c, keys, into)
	}
	if c.fkParts != nil {
		return p.countChildrenComposite(tx, c, keys, into)
	}
	fk := clause.Column{Table: clause.CurrentTable, Name: c.fk.DBName}
	agg := "COUNT(*)"
	vars := []any{fk}
	if c.sum != nil {
		agg = "COALESCE(SUM(?), 0)"
		vars = append(vars, clause.Column{Table: clause.CurrentTable, Name: c.sum.DBName})
	}
	q := WithoutFill(session.Routed(tx)).Model(reflect.New(c.child.schema.ModelType).Interface()).
		Select("?, "+agg, vars...).
		Where(clause.IN{Column: fk, Values: keys}).
		Clauses(clause.GroupBy{Columns: []clause.Column{fk}})
	if c.where != nil {
		q = q.Where(*c.where)
	}
	if c.deleted {
		q = q.Unscoped()
	}
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		fkv := nullable(c.fk)
		var n int64
		if err := rows.Scan(fkv, &n); err != nil {
			return err
		}
		id, ok, err := fkID(scanned(fkv))
		if err != nil {
			return err
		}
		if ok {
			n, ok := write.ScaleDelta(n, c.weight)
			if ok {
				n, ok = write.MergeDelta(into[deltaKey{c, id}], n)
			}
			if !ok {
				return ErrOverflow
			}
			into[deltaKey{c, id}] = n
		}
	}
	return rows.Err()
}
