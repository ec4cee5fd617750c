package slotted

import (
	"reflect"
	"slices"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/countercache"
)

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
func Fix(db *gorm.DB, models any, opts ...FixOptions) ([]Drift, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	p, err := pluginOf(db)
	if err != nil {
		return nil, err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return nil, err
	}
	caches, err := p.caches.CachesOfModel(m, o.Counters)
	if err != nil {
		return nil, err
	}
	if o.BatchSize, err = batchSize(o.BatchSize, 100, "FixOptions.BatchSize"); err != nil {
		return nil, err
	}
	rs, err := m.Records(elem, true)
	if err != nil {
		return nil, err
	}
	var all []Drift
	for ids := range slices.Chunk(rs.IDs, o.BatchSize) {
		keys := make([]any, len(ids))
		for i, id := range ids {
			keys[i] = m.Key.Value(rs.ByID[id][0])
		}
		drifts, actual, err := p.caches.FixRecords(db, caches, ids, keys, o.DryRun, o.OnDrift)
		if err != nil {
			return all, err
		}
		all = append(all, drifts...)
		if o.DryRun {
			continue
		}
		countercache.SetFields(caches, rs.ByID, ids, actual)
	}
	return all, nil
}

// FixAll recomputes the counter caches of every record of model's table (or
// those Scope selects), BatchSize parents per transaction, in primary-key
// order; After resumes an interrupted run.
//
//	SELECT id FROM posts [WHERE <Scope>] AND id > ? ORDER BY id LIMIT 100   -- on the primary
//	-- then Fix's transaction for those 100 posts, and the next page
func FixAll(db *gorm.DB, model any, opts ...FixOptions) (FixProgress, error) {
	var prog FixProgress
	o, err := optionsOf(opts)
	if err != nil {
		return prog, err
	}
	p, err := pluginOf(db)
	if err != nil {
		return prog, err
	}
	if o.BatchSize, err = batchSize(o.BatchSize, 100, "FixOptions.BatchSize"); err != nil {
		return prog, err
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return prog, err
	}
	caches, err := p.caches.CachesOfModel(m, o.Counters)
	if err != nil {
		return prog, err
	}
	err = keysetPages(db, m, p.dialect, o.BatchSize, o.After, o.Scope, func(page reflect.Value, last any) error {
		rs, err := m.Records(page, true)
		if err != nil {
			return err
		}
		keys := make([]any, len(rs.IDs))
		for i, id := range rs.IDs {
			keys[i] = m.Key.Value(rs.ByID[id][0])
		}
		drifts, _, err := p.caches.FixRecords(db, caches, rs.IDs, keys, o.DryRun, o.OnDrift)
		if err != nil {
			return err
		}
		prog.Batches++
		prog.Records += page.Len()
		prog.Drifted += len(drifts)
		prog.Last = last
		if o.Progress != nil {
			o.Progress(prog)
		}
		return nil
	})
	return prog, err
}
