package countercache

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/tables"
)

// Drift is a counter cache whose stored total differs from its children.
type Drift struct {
	Record  any    // the parent's primary key
	Counter string // the counter's tag name
	Ref     meta.Ref
	Stored  int64 // the counter's total
	Actual  int64 // counted (or summed) from the children
}

// errFixDryRun rolls a dry run's transaction back.
var errFixDryRun = errors.New("slotted: dry run")

// CachesOfModel returns the named counter caches of a parent model (all when names is empty).
func (p *Caches) CachesOfModel(m *meta.Model, names []string) ([]*counterCache, error) {
	counters, err := m.Selected(names)
	if err != nil {
		return nil, err
	}
	var out []*counterCache
	for _, c := range counters {
		cc := p.cacheOf(c)
		if cc == nil {
			if len(names) > 0 {
				return nil, fmt.Errorf("%w: counter %q of %s is not a counter cache (declare it with CounterCache)", errs.ErrInvalidConfig, c.Name, m.Type)
			}
			continue
		}
		out = append(out, cc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no counter caches (declare them with CounterCache)", errs.ErrInvalidConfig, m.Type)
	}
	return out, nil
}

// FixRecords recomputes the caches of the parents ids (record ids; keys are their
// primary key values, in the same order) in one write transaction.
func (p *Caches) FixRecords(db *gorm.DB, caches []*counterCache, ids []string, keys []any, dryRun bool, onDrift func(Drift)) (drifts []Drift, actual deltas, err error) {
	var refs []meta.Ref
	owner := map[meta.Ref]deltaKey{}
	record := map[string]any{}
	for i, id := range ids {
		record[id] = keys[i]
		for _, c := range caches {
			r := meta.Ref{Type: c.counter.RecordType, ID: id}
			refs = append(refs, r)
			owner[r] = deltaKey{c, id}
		}
	}
	slices.SortFunc(refs, meta.CompareRefs)
	savepoint := dryRun && session.InTx(db)
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
		rows, err := tables.LockRows(tx, p.cfg.Table, p.dialect, refs)
		if err != nil {
			return err
		}
		for _, c := range caches {
			if err := p.countChildren(tx, c, keys, actual); err != nil {
				return err
			}
		}
		stored := map[meta.Ref]int64{}
		lowest := map[meta.Ref]int32{}
		for _, r := range rows {
			ref := meta.Ref{Type: string(r.RecordType), ID: string(r.RecordID)}
			if _, seen := lowest[ref]; !seen {
				lowest[ref] = r.Slot
			}
			stored[ref] += r.Count
		}
		var keep []tables.Counter
		for _, ref := range refs {
			k := owner[ref]
			if stored[ref] != actual[k] {
				d := Drift{Record: record[ref.ID], Counter: k.c.counter.Name, Ref: ref, Stored: stored[ref], Actual: actual[k]}
				drifts = append(drifts, d)
				if onDrift != nil {
					onDrift(d)
				}
			}
			if actual[k] != 0 {
				keep = append(keep, tables.Counter{RecordType: tables.Key(ref.Type), RecordID: tables.Key(ref.ID), Slot: lowest[ref], Count: actual[k]})
			}
		}
		if dryRun {
			if savepoint {
				if err := tx.RollbackTo("slotted_fix").Error; err != nil {
					return err
				}
				return nil
			}
			return errFixDryRun
		}
		_, err = tables.ReplaceRows(tx, p.cfg.Table, rows, keep)
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
func (p *Caches) lockSlots(tx *gorm.DB, owner map[meta.Ref]deltaKey, refs []meta.Ref) error {
	var rows []tables.Counter
	for _, r := range refs {
		for slot := range owner[r].c.counter.Slots {
			rows = append(rows, tables.Counter{RecordType: tables.Key(r.Type), RecordID: tables.Key(r.ID), Slot: int32(slot)})
		}
	}
	return p.upsertLockRows(tx, rows)
}

// countChildren counts (or sums) the live children of the parents keys that
// match the cache's condition, by foreign key.
//
//	SELECT comments.post_id, COUNT(*) FROM comments WHERE comments.post_id IN (...) [AND <Where>]
//	  AND comments.deleted_at IS NULL GROUP BY comments.post_id
func (p *Caches) countChildren(tx *gorm.DB, c *counterCache, keys []any, into deltas) error {
	if c.through != nil {
		return p.countThrough(tx, c, keys, into)
	}
	if c.fkParts != nil {
		return p.countChildrenComposite(tx, c, keys, into)
	}
	if c.joinCol != "" {
		return p.countJoinRows(tx, c, keys, into)
	}
	fk := clause.Column{Table: clause.CurrentTable, Name: c.fk.DBName}
	rows, err := childCounts(tx, c, []clause.Column{fk}, fk, keys)
	if err != nil {
		return err
	}
	return into.addRows(rows, c, c.weight)
}

// childCounts reads the count (or sum) of the children matching the cache's
// condition per foreign key, cols its columns and in what the keys are
// compared with: the one column, or all of them for a composite key.
func childCounts(tx *gorm.DB, c *counterCache, cols []clause.Column, in any, keys []any) (*sql.Rows, error) {
	vars := make([]any, 0, len(cols)+1)
	for _, col := range cols {
		vars = append(vars, col)
	}
	agg := "COUNT(*)"
	if c.sum != nil {
		agg = "COALESCE(SUM(?), 0)"
		vars = append(vars, clause.Column{Table: clause.CurrentTable, Name: c.sum.DBName})
	}
	q := session.WithoutFill(session.Routed(tx)).Model(reflect.New(c.child.schema.ModelType).Interface()).
		Select(strings.Repeat("?, ", len(cols))+agg, vars...).
		Where(clause.IN{Column: in, Values: keys}).
		Clauses(clause.GroupBy{Columns: cols})
	if c.where != nil {
		q = q.Where(*c.where)
	}
	if c.deleted {
		q = q.Unscoped()
	}
	return q.Rows()
}

// SetFields moves the counter fields of the fixed records (byID, by
// record_id) to their recounted totals.
func SetFields(caches []*counterCache, byID map[string][]reflect.Value, ids []string, actual deltas) {
	for _, id := range ids {
		for _, c := range caches {
			for _, s := range byID[id] {
				c.counter.Set(s, actual[deltaKey{c, id}])
			}
		}
	}
}

// FixProgress reports a FixAll run.
type FixProgress struct {
	Batches int // transactions committed
	Records int // parent records recomputed
	Drifted int // counters that differed from their children
	Last    any // primary key of the last parent of the last batch: FixOptions.After to resume
}
