package slotted

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/keyset"

	"github.com/slotted-go/slotted/internal/meta"
)

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
// on its own, and After resumes after the last one. Two runs at once are safe:
// they lock the same rows in the same order, and the second finds each
// counter already folded.
//
// A batch whose transaction keeps failing with a lock conflict (after the
// retries) is compacted again one counter per transaction, so one hot counter
// holds back only itself: it is listed in CompactProgress.Skipped, the run
// goes on, and CompactAll returns an error saying how many counters it skipped
// (ConflictOf classifies it) along with the progress. Any other error stops
// the run.
func CompactAll(db *gorm.DB, opts ...CompactOptions) (CompactProgress, error) {
	var prog CompactProgress
	o, err := optionsOf(opts)
	if err != nil {
		return prog, err
	}
	p, err := liveOf(db)
	if err != nil {
		return prog, err
	}
	if o.MinRows, err = batchSize(o.MinRows, 1, "CompactOptions.MinRows"); err != nil {
		return prog, err
	}
	if o.BatchSize, err = batchSize(o.BatchSize, 100, "CompactOptions.BatchSize"); err != nil {
		return prog, err
	}
	for what, key := range map[string]string{"CompactOptions.RecordType": o.RecordType, "CompactOptions.After.Type": o.After.Type, "CompactOptions.After.ID": o.After.ID} {
		if err := meta.CheckKey(what, key); err != nil {
			return prog, err
		}
	}
	var start []any
	if o.After != (Ref{}) {
		start = []any{o.After.Type, o.After.ID}
	}
	read := func(after []any) ([]Ref, int, []any, error) {
		var from Ref
		if after != nil {
			from = Ref{Type: after[0].(string), ID: after[1].(string)}
		}
		refs, err := p.maint.Crowded(db, o.RecordType, from, o.MinRows, o.BatchSize)
		if err != nil || len(refs) == 0 {
			return nil, 0, nil, err
		}
		last := refs[len(refs)-1]
		return refs, len(refs), []any{last.Type, last.ID}, nil
	}
	var skipErr error // the first skipped counter's conflict
	err = keyset.Walk(session.Context(db), o.BatchSize, start, read, func(refs []Ref, _ []any) error {
		if err := p.compactBatch(db, refs, &prog, &skipErr); err != nil {
			return err
		}
		prog.Counters += len(refs)
		prog.Last = refs[len(refs)-1]
		if o.Progress != nil {
			o.Progress(prog)
		}
		return nil
	})
	if err != nil {
		return prog, err
	}
	return prog, skippedError(prog.Skipped, skipErr)
}

// compactBatch compacts refs in one transaction or, when that keeps failing
// with a lock conflict, one transaction per counter, recording what it
// skipped. It returns only errors that must stop the run.
func (p *Plugin) compactBatch(db *gorm.DB, refs []Ref, prog *CompactProgress, skipErr *error) error {
	removed, err := p.maint.Compact(db, refs)
	if err == nil {
		prog.Batches++
		prog.RowsRemoved += removed
		return nil
	}
	if ConflictOf(err) == NoConflict {
		return err
	}
	if len(refs) == 1 {
		prog.Skipped = append(prog.Skipped, refs[0])
		if *skipErr == nil {
			*skipErr = err
		}
		return nil
	}
	for _, ref := range refs {
		if err := session.Context(db).Err(); err != nil {
			return err
		}
		if err := p.compactBatch(db, []Ref{ref}, prog, skipErr); err != nil {
			return err
		}
	}
	return nil
}

// skippedError reports the counters a finished run skipped, or nil.
func skippedError(skipped []Ref, first error) error {
	if len(skipped) == 0 {
		return nil
	}
	return fmt.Errorf("slotted: CompactAll skipped %d counters that kept failing with lock conflicts (first %s/%s): %w",
		len(skipped), skipped[0].Type, skipped[0].ID, first)
}
