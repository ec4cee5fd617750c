package slotted

import (
	"reflect"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/tables"
	"github.com/slotted-go/slotted/internal/write"
)

// loadChunk bounds the record ids in one batched read, well under every
// dialect's bind-parameter limit (SQLite's is 32766, MySQL's and PostgreSQL's 65535).
const loadChunk = tables.LoadChunk

// Count returns a counter's total: the sum of its slot rows, 0 when it has none,
// or ErrOverflow when the sum does not fit in int64.
// model is a struct or a pointer to one with a primary key value.
//
//	likes, err := slotted.Count(db, &post, "likes")
//	// SELECT COALESCE(SUM(`count`), 0) FROM `slotted_counters` WHERE `record_type` = 'posts.likes' AND `record_id` = '42'
func Count(db *gorm.DB, model any, counter string) (int64, error) {
	p, err := pluginOf(db)
	if err != nil {
		return 0, err
	}
	c, _, id, err := p.models.Target(db, model, counter)
	if err != nil {
		return 0, err
	}
	return p.sum(db, c.RecordType, id)
}

// CountRef returns the total of the counter named by ref; see Ref.
func CountRef(db *gorm.DB, ref Ref) (int64, error) {
	p, err := pluginOf(db)
	if err != nil {
		return 0, err
	}
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	return p.sum(db, ref.Type, ref.ID)
}

func (p *Plugin) sum(db *gorm.DB, recordType, recordID string) (int64, error) {
	tx := p.sessions.Raw(db)
	// Rows, not Row: on a failed prepare gorm's prepared-statement pool hands
	// back an empty *sql.Row whose Scan panics.
	rows, err := tx.Raw(p.sql.Sum, write.Args(p.sql.SumArgs, recordType, recordID, 0, 0)...).Rows()
	if tx.DryRun { // rendered and logged; nothing was read
		return 0, ErrDryRun
	}
	if err != nil {
		return 0, tables.Overflowed(err)
	}
	defer rows.Close()
	var n tables.Total
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return int64(n), tables.Overflowed(rows.Err())
}

// Load fills counter fields of models with one query per 1000 records (not
// one per record). models is a pointer to a struct, or a slice or array (or a
// pointer to one) of structs or struct pointers. With no counter names it
// fills every counter of the model.
//
//	slotted.Load(db, &posts, "likes")
//	// SELECT `record_type`,`record_id`,SUM(`count`) FROM `slotted_counters`
//	// WHERE `record_type` IN ('posts.likes') AND `record_id` IN ('1','2','3') GROUP BY `record_type`,`record_id`
func Load(db *gorm.DB, models any, counters ...string) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	m, elem, err := p.models.ModelsArg(db, models)
	if err != nil {
		return err
	}
	selected, err := m.Selected(counters)
	if err != nil {
		return err
	}
	return p.fill(db, m, selected, elem, true)
}

// fill loads the selected counters of every struct in v (a struct, or a
// slice/array of structs or pointers) and sets their fields; counters with no
// rows are set to 0. strict makes a record without a primary key an error;
// auto-fill leaves such records alone (a Select that skipped the key column).
func (p *Plugin) fill(db *gorm.DB, m *meta.Model, selected []*meta.Counter, v reflect.Value, strict bool) error {
	rs, err := m.Records(v, strict)
	if err != nil || len(rs.IDs) == 0 || len(selected) == 0 {
		return err
	}
	totals := make(map[[2]string]int64, len(rs.IDs)*len(selected))
	for chunk := range slices.Chunk(rs.IDs, loadChunk) {
		if err := p.sums(db, meta.RecordTypes(selected), chunk, totals); err != nil {
			return err
		}
	}
	for id, structs := range rs.ByID {
		for _, c := range selected {
			n := totals[[2]string{c.RecordType, id}]
			for _, s := range structs {
				c.Set(s, n)
			}
		}
	}
	return nil
}

// sums reads the totals of several counters of several records in one GROUP BY.
func (p *Plugin) sums(db *gorm.DB, types []any, ids []string, into map[[2]string]int64) error {
	idVals := make([]any, len(ids))
	for i, id := range ids {
		idVals[i] = id
	}
	tx := session.Routed(db)
	q := tx.Table(p.cfg.Table).
		Select("?, ?, SUM(?)", clause.Column{Name: "record_type"}, clause.Column{Name: "record_id"}, clause.Column{Name: "count"}).
		Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: types}).
		Where(clause.IN{Column: clause.Column{Name: "record_id"}, Values: idVals}).
		Clauses(clause.GroupBy{Columns: []clause.Column{{Name: "record_type"}, {Name: "record_id"}}})
	if p.causalReads() {
		dialect.WaitCausally(q)
	}
	rows, err := q.Rows()
	if tx.DryRun { // rendered and logged; nothing was read
		return ErrDryRun
	}
	if err != nil {
		return tables.Overflowed(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, id string
		var n tables.Total
		if err := rows.Scan(&typ, &id, &n); err != nil {
			return err
		}
		into[[2]string{typ, id}] = int64(n)
	}
	return tables.Overflowed(rows.Err())
}
