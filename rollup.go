package slotted

import (
	"reflect"
	"slices"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/tables"
)

// RollUp writes the current total of counters into their cache columns on the
// parent rows, so plain gorm queries can read and sort by them without
// touching the counter table:
//
//	type Post struct {
//		ID         uint
//		Likes      int64 `gorm:"-" slotted:"likes;cache:likes_count"`
//		LikesCount int64 // filled by RollUp; db.Order("likes_count DESC") works
//	}
//
//	slotted.RollUp(db, &posts) // or &post, or specific counters: slotted.RollUp(db, &posts, "likes")
//	// SELECT record_type, record_id, SUM(count) ... GROUP BY record_type, record_id   (one per 1000 records)
//	// UPDATE posts SET likes_count = 17 WHERE id = 1                                   (one per record)
//
// The updates of each 1000 records run in one transaction; UpdateColumns is
// used, so hooks and UpdatedAt are not touched. The models' counter and cache
// fields are set to the totals too. A cache column is as fresh as the last
// RollUp: with a Runner, at most its Interval plus one pass behind.
func RollUp(db *gorm.DB, models any, counters ...string) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, v, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	selected, err := m.Cached(counters)
	if err != nil {
		return err
	}
	return p.rollUp(db, m, selected, v)
}

func (p *Plugin) rollUp(db *gorm.DB, m *meta.Model, selected []*meta.Counter, v reflect.Value) error {
	rs, err := m.Records(v, true)
	if err != nil || len(rs.IDs) == 0 {
		return err
	}
	types := meta.RecordTypes(selected)
	totals := make(map[[2]string]int64, len(rs.IDs)*len(selected))
	for ids := range slices.Chunk(rs.IDs, tables.LoadChunk) {
		err := p.sessions.WriteTx(db, func(tx *gorm.DB) error {
			// Read inside the transaction, so that a retried attempt writes fresh totals.
			for _, id := range ids {
				for _, c := range selected {
					delete(totals, [2]string{c.RecordType, id})
				}
			}
			if err := p.reads.Sums(tx, types, ids, totals); err != nil {
				return err
			}
			for _, id := range ids {
				s := rs.ByID[id][0]
				cols := make(map[string]any, len(selected))
				for _, c := range selected {
					cols[c.Cache] = totals[[2]string{c.RecordType, id}]
				}
				err := tx.Table(m.Table).Where(m.Key.Eq("", s)).
					UpdateColumns(cols).Error
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for id, structs := range rs.ByID {
		for _, c := range selected {
			n := totals[[2]string{c.RecordType, id}]
			for _, s := range structs {
				c.Set(s, n)
				if f, ok := meta.Walk(s, c.CacheIndex, true); ok && f.CanSet() {
					meta.SetInt(f, n)
				}
			}
		}
	}
	return nil
}

// RollUpOptions configures RollUpAll.
type RollUpOptions struct {
	// BatchSize is how many parent records are read and rolled up at a time. Default: 500.
	BatchSize int
	// After resumes a run after this primary key value (RollUpProgress.Last of an interrupted run).
	After any
	// Progress, when set, is called after every batch.
	Progress func(RollUpProgress)
}

// RollUpAll rolls up the cached counters of every record of model's table, in
// primary-key order and batches of BatchSize:
//
//	SELECT id FROM posts WHERE id > ? ORDER BY id LIMIT 500
//	-- then RollUp on those records
func RollUpAll(db *gorm.DB, model any, opts ...RollUpOptions) (RollUpProgress, error) {
	var prog RollUpProgress
	o, err := optionsOf(opts)
	if err != nil {
		return prog, err
	}
	p, err := pluginOf(db)
	if err != nil {
		return prog, err
	}
	if o.BatchSize, err = batchSize(o.BatchSize, 500, "RollUpOptions.BatchSize"); err != nil {
		return prog, err
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return prog, err
	}
	selected, err := m.Cached(nil)
	if err != nil {
		return prog, err
	}
	err = keysetPages(db, m, p.dialect, o.BatchSize, o.After, nil, func(page reflect.Value, last any) error {
		if err := p.rollUp(db, m, selected, page); err != nil {
			return err
		}
		prog.Batches++
		prog.Records += page.Len()
		prog.Last = last
		if o.Progress != nil {
			o.Progress(prog)
		}
		return nil
	})
	return prog, err
}
