package slotted

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/keyset"
	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"
)

// SweepOptions configures Sweep.
type SweepOptions struct {
	// BatchSize is how many record ids are checked against the parent table at a time. Default: 500.
	BatchSize int
}

// Sweep removes the counter rows of model's counters whose parent record no
// longer exists (deleted with raw SQL, or before the plugin was installed).
// It walks the distinct record ids in batches,
//
//	SELECT DISTINCT record_id FROM slotted_counters WHERE record_type IN (...) AND record_id > ? ORDER BY record_id LIMIT 500
//	SELECT id FROM posts WHERE id IN (...)
//	DELETE FROM slotted_counters WHERE record_type IN (...) AND record_id IN (<ids not found>)
//
// Run it only for models whose primary keys are never reused (auto-increment
// integers, UUIDs): a record created again under a swept id would start at 0.
func Sweep(db *gorm.DB, model any, opts ...SweepOptions) (SweepProgress, error) {
	var prog SweepProgress
	o, err := optionsOf(opts)
	if err != nil {
		return prog, err
	}
	p, err := liveOf(db)
	if err != nil {
		return prog, err
	}
	if o.BatchSize, err = batchSize(o.BatchSize, 500, "SweepOptions.BatchSize"); err != nil {
		return prog, err
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return prog, err
	}
	if err := m.Key.Sweepable(); err != nil {
		return prog, err
	}
	types := meta.RecordTypes(m.Counters)
	rid := []clause.Column{{Name: "record_id"}}
	// Its reads decide a delete: the ids and their parents are read on the
	// primary, never on replicas at different lag (a replica behind the other
	// would make live counters look orphaned).
	counters, parents := session.Primary(db, p.cfg.Table), session.Primary(db, m.Table)
	read := func(after []any) ([]string, int, []any, error) {
		var ids []string
		q := counters.Table(p.cfg.Table).Distinct("record_id").
			Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: types}).
			Order(keyset.Order(rid)).Limit(o.BatchSize)
		if after != nil {
			q = q.Where(keyset.After(rid, after, false))
		}
		if err := q.Pluck("record_id", &ids).Error; err != nil || len(ids) == 0 {
			return nil, 0, nil, err
		}
		return ids, len(ids), []any{ids[len(ids)-1]}, nil
	}
	err = keyset.Walk(session.Context(db), o.BatchSize, nil, read, func(ids []string, _ []any) error {
		orphans, err := p.maint.Orphans(parents, m, ids)
		if err != nil {
			return err
		}
		prog.Checked += len(ids)
		prog.Orphans += len(orphans)
		if len(orphans) > 0 {
			removed, err := p.hooks.DeleteRows(counters, types, orphans)
			prog.Rows += removed
			return err
		}
		return nil
	})
	return prog, err
}
