package slotted

import (
	"cmp"
	"iter"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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
	c, _, id, err := p.resolve(db, model, counter)
	if err != nil {
		return err
	}
	_, err = p.rewrite(db, []Ref{{c.recordType, id}}, nil)
	return err
}

// CompactRef is Compact for a counter named by Ref.
func CompactRef(db *gorm.DB, ref Ref) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	if err := ref.validate(); err != nil {
		return err
	}
	_, err = p.rewrite(db, []Ref{ref}, nil)
	return err
}

// Reset sets a counter to value atomically: the "recount from the source"
// case. Its slot rows are locked, deleted and replaced by one row holding
// value (none when value is 0), so afterwards the counter is value plus
// exactly the increments that committed after the reset. model's field is
// set to value too.
func Reset(db *gorm.DB, model any, counter string, value int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	c, v, id, err := p.resolve(db, model, counter)
	if err != nil {
		return err
	}
	if _, err := p.rewrite(db, []Ref{{c.recordType, id}}, &value); err != nil {
		return err
	}
	c.set(v, value)
	return nil
}

// ResetRef is Reset for a counter named by Ref.
func ResetRef(db *gorm.DB, ref Ref, value int64) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	if err := ref.validate(); err != nil {
		return err
	}
	_, err = p.rewrite(db, []Ref{ref}, &value)
	return err
}

// rewriteChunk bounds the tuples of one DELETE (3 bind values each).
const rewriteChunk = 1000

// rewrite replaces the slot rows of each counter in refs by a single row, in
// one write transaction: with their sum (compaction; counters with at most
// one row are left alone) or with *reset. It returns how many rows it removed.
func (p *Plugin) rewrite(db *gorm.DB, refs []Ref, reset *int64) (removed int64, err error) {
	refs = slices.Clone(refs)
	slices.SortFunc(refs, compareRefs) // lock in key order, as every writer of these rows does
	err = p.writeTx(db, func(tx *gorm.DB) error {
		removed = 0
		var rows []SlottedCounter
		q := tx.Table(p.cfg.Table).Select("record_type", "record_id", "slot", "count").Where(refsCondition(refs)).
			Order(clause.OrderBy{Columns: []clause.OrderByColumn{{Column: clause.Column{Name: "record_type"}}, {Column: clause.Column{Name: "record_id"}}, {Column: clause.Column{Name: "slot"}}}})
		if tx.Dialector.Name() != "sqlite" { // SQLite's BEGIN IMMEDIATE already holds the database's write lock
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		if err := q.Find(&rows).Error; err != nil {
			return err
		}
		var drop []SlottedCounter // the locked rows to delete, in key order
		var keep []SlottedCounter
		for group := range runs(rows, sameCounter) {
			if reset == nil && len(group) < 2 {
				continue
			}
			row := SlottedCounter{RecordType: group[0].RecordType, RecordID: group[0].RecordID, Slot: group[0].Slot}
			for _, r := range group {
				row.Count += r.Count
				drop = append(drop, r)
			}
			if reset != nil {
				row.Count = *reset
			}
			if row.Count != 0 {
				keep = append(keep, row)
			}
		}
		if reset != nil && *reset != 0 { // counters without rows get one
			have := map[Ref]bool{}
			for _, r := range rows {
				have[Ref{string(r.RecordType), string(r.RecordID)}] = true
			}
			for _, ref := range refs {
				if have[ref] {
					continue
				}
				// Nothing was locked for this counter, so a writer may create
				// its slot 0 meanwhile (and another Reset may too): set it
				// rather than insert it. An increment overwritten here raced
				// the reset and is ordered before it.
				row := SlottedCounter{RecordType: Key(ref.Type), RecordID: Key(ref.ID), Count: *reset}
				err := tx.Table(p.cfg.Table).Clauses(clause.OnConflict{
					Columns:   []clause.Column{{Name: "record_type"}, {Name: "record_id"}, {Name: "slot"}},
					DoUpdates: clause.Set{{Column: clause.Column{Name: "count"}, Value: *reset}},
				}).Create(&row).Error
				if err != nil {
					return err
				}
			}
		}
		for chunk := range slices.Chunk(drop, rewriteChunk) {
			res := tx.Table(p.cfg.Table).Where(slotsCondition(chunk)).Delete(&SlottedCounter{})
			if res.Error != nil {
				return res.Error
			}
			removed += res.RowsAffected
		}
		if len(keep) > 0 {
			if err := tx.Table(p.cfg.Table).CreateInBatches(&keep, 500).Error; err != nil {
				return err
			}
			removed -= int64(len(keep))
		}
		return nil
	})
	return removed, err
}

// refsCondition selects the rows of the given counters (sorted). It is
// written as record_type = ? AND record_id IN (...) per record type, because
// PostgreSQL plans a row-value IN list as a scan of the whole record type with
// an OR filter per row.
func refsCondition(refs []Ref) clause.Expression {
	rt, rid := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}
	var or []clause.Expression
	for group := range runs(refs, func(a, b Ref) bool { return a.Type == b.Type }) {
		ids := make([]any, len(group))
		for i, r := range group {
			ids[i] = r.ID
		}
		or = append(or, clause.And(clause.Eq{Column: rt, Value: group[0].Type}, clause.IN{Column: rid, Values: ids}))
	}
	return clause.Or(or...)
}

// slotsCondition selects exactly the given rows (sorted by key), as
// record_type = ? AND record_id = ? AND slot IN (...) per counter.
func slotsCondition(rows []SlottedCounter) clause.Expression {
	rt, rid, slot := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}, clause.Column{Name: "slot"}
	var or []clause.Expression
	for group := range runs(rows, sameCounter) {
		slots := make([]any, len(group))
		for i, r := range group {
			slots[i] = r.Slot
		}
		or = append(or, clause.And(clause.Eq{Column: rt, Value: string(group[0].RecordType)},
			clause.Eq{Column: rid, Value: string(group[0].RecordID)}, clause.IN{Column: slot, Values: slots}))
	}
	return clause.Or(or...)
}

func sameCounter(a, b SlottedCounter) bool {
	return a.RecordType == b.RecordType && a.RecordID == b.RecordID
}

// runs yields the runs of consecutive elements of xs that same puts together
// (rows sorted by key, grouped by counter).
func runs[T any](xs []T, same func(a, b T) bool) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for start := 0; start < len(xs); {
			end := start + 1
			for end < len(xs) && same(xs[start], xs[end]) {
				end++
			}
			if !yield(xs[start:end]) {
				return
			}
			start = end
		}
	}
}

func compareRefs(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID))
}

// CompactOptions configures CompactAll. The zero value compacts every counter
// with more than one row, 100 counters per transaction.
type CompactOptions struct {
	// RecordType limits the run to one record_type ("posts.likes"). Default: all.
	RecordType string
	// MinRows: only counters with more than MinRows slot rows are compacted. Default: 1.
	MinRows int
	// BatchSize is how many counters one transaction compacts (and the LIMIT of
	// each scan). Larger batches hold more locks for longer. Default: 100.
	BatchSize int
	// After resumes a run: only counters after this one, in (record_type,
	// record_id) order, are examined. Pass the Last of an interrupted run.
	After Ref
	// Progress, when set, is called after every batch.
	Progress func(CompactProgress)
}

// CompactProgress reports a CompactAll run.
type CompactProgress struct {
	Batches     int   // transactions committed
	Counters    int   // counters examined that had more than MinRows rows
	RowsRemoved int64 // slot rows removed
	// Last is the last counter of the last committed batch: CompactOptions.After
	// for resuming. Zero until the first batch commits.
	Last Ref
}

// CompactAll compacts, in bounded batches, every counter (of one record_type,
// optionally) that has more than MinRows slot rows. It walks the counter table
// once in primary-key order with keyset pagination,
//
//	SELECT record_type, record_id FROM slotted_counters
//	  WHERE record_type > ? OR (record_type = ? AND record_id > ?)
//	  GROUP BY record_type, record_id HAVING COUNT(*) > 1
//	  ORDER BY record_type, record_id LIMIT 100
//
// and compacts each batch in one transaction as Compact does. Stopping it
// (context cancellation, an error, a crash) loses nothing: each batch commits
// on its own, and After resumes after the last committed one. Two runs at once
// are safe: they lock the same rows in the same order, and the second finds
// each counter already folded.
func CompactAll(db *gorm.DB, opts CompactOptions) (CompactProgress, error) {
	var prog CompactProgress
	p, err := pluginOf(db)
	if err != nil {
		return prog, err
	}
	if opts.MinRows, err = batchSize(opts.MinRows, 1, "CompactOptions.MinRows"); err != nil {
		return prog, err
	}
	if opts.BatchSize, err = batchSize(opts.BatchSize, 100, "CompactOptions.BatchSize"); err != nil {
		return prog, err
	}
	ctx := contextOf(db)
	after := opts.After
	for {
		if err := ctx.Err(); err != nil {
			return prog, err
		}
		refs, err := p.crowded(db, opts.RecordType, after, opts.MinRows, opts.BatchSize)
		if err != nil {
			return prog, err
		}
		if len(refs) == 0 {
			return prog, nil
		}
		removed, err := p.rewrite(db, refs, nil)
		if err != nil {
			return prog, err
		}
		after = refs[len(refs)-1]
		prog.Batches++
		prog.Counters += len(refs)
		prog.RowsRemoved += removed
		prog.Last = after
		if opts.Progress != nil {
			opts.Progress(prog)
		}
		if len(refs) < opts.BatchSize {
			return prog, nil
		}
	}
}

// crowded returns up to limit counters after `after` with more than minRows rows.
func (p *Plugin) crowded(db *gorm.DB, recordType string, after Ref, minRows, limit int) ([]Ref, error) {
	rt, rid := clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}
	q := db.Session(&gorm.Session{NewDB: true}).Table(p.cfg.Table).Select("?, ?", rt, rid)
	switch {
	case recordType != "" && after.Type > recordType:
		return nil, nil // resumed past this record_type
	case recordType != "":
		q = q.Where(clause.Eq{Column: rt, Value: recordType})
		if after.Type == recordType {
			q = q.Where(clause.Gt{Column: rid, Value: after.ID})
		}
	case after != Ref{} && db.Dialector.Name() == "postgres":
		// A row comparison is one index condition on PostgreSQL, so the scan
		// streams from the resume point instead of aggregating the whole rest.
		q = q.Where(clause.Expr{SQL: "(?, ?) > (?, ?)", Vars: []any{rt, rid, after.Type, after.ID}})
	case after != Ref{}:
		q = q.Where(clause.Or(clause.Gt{Column: rt, Value: after.Type},
			clause.And(clause.Eq{Column: rt, Value: after.Type}, clause.Gt{Column: rid, Value: after.ID})))
	}
	var refs []Ref
	rows, err := q.Group("record_type").Group("record_id").Having("COUNT(*) > ?", minRows).
		Order(clause.OrderBy{Columns: []clause.OrderByColumn{{Column: rt}, {Column: rid}}}).Limit(limit).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r Ref
		if err := rows.Scan(&r.Type, &r.ID); err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	return refs, rows.Err()
}
