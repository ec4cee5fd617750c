package query

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/tables"
	"github.com/slotted-go/slotted/internal/write"
)

func (p *Reader) Sum(db *gorm.DB, recordType, recordID string) (int64, error) {
	tx := p.sessions.Raw(db)
	// Rows, not Row: on a failed prepare gorm's prepared-statement pool hands
	// back an empty *sql.Row whose Scan panics.
	rows, err := tx.Raw(p.sql.Sum, write.Args(p.sql.SumArgs, recordType, recordID, 0, 0)...).Rows()
	if tx.DryRun { // rendered and logged; nothing was read
		return 0, errs.ErrDryRun
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

// Fill loads the selected counters of every struct in v (a struct, or a
// slice/array of structs or pointers) and sets their fields; counters with no
// rows are set to 0. strict makes a record without a primary key an error;
// auto-fill leaves such records alone (a Select that skipped the key column).
func (p *Reader) Fill(db *gorm.DB, m *meta.Model, selected []*meta.Counter, v reflect.Value, strict bool) error {
	rs, err := m.Records(v, strict)
	if err != nil || len(rs.IDs) == 0 || len(selected) == 0 {
		return err
	}
	totals := make(map[[2]string]int64, len(rs.IDs)*len(selected))
	for chunk := range slices.Chunk(rs.IDs, tables.LoadChunk) {
		if err := p.Sums(db, meta.RecordTypes(selected), chunk, totals); err != nil {
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

// Sums reads the totals of several counters of several records in one GROUP BY.
func (p *Reader) Sums(db *gorm.DB, types []any, ids []string, into map[[2]string]int64) error {
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
		return errs.ErrDryRun
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

// WindowSums adds SUM(count) over the given record_types for the given
// records into `into`, keyed by record_id, or by record_type when perBucket.
func (p *Reader) WindowSums(db *gorm.DB, types, ids []string, perBucket bool, into map[string]int64) error {
	group := clause.Column{Name: "record_id"}
	if perBucket {
		group = clause.Column{Name: "record_type"}
	}
	for tchunk := range slices.Chunk(types, TypeChunk) {
		for ichunk := range slices.Chunk(ids, max(1, min(tables.LoadChunk, WindowCells/len(tchunk)))) {
			tx := session.Routed(db)
			rows, err := tx.Table(p.cfg.Table).
				Select("?, SUM(?)", group, clause.Column{Name: "count"}).
				Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: Anys(tchunk)}).
				Where(clause.IN{Column: clause.Column{Name: "record_id"}, Values: Anys(ichunk)}).
				Group(group.Name).Rows()
			if tx.DryRun {
				return errs.ErrDryRun
			}
			if err != nil {
				return tables.Overflowed(err)
			}
			for rows.Next() {
				var key string
				var n tables.Total // ErrOverflow past int64, as Sums
				if err := rows.Scan(&key, &n); err != nil {
					rows.Close()
					return err
				}
				sum, ok := write.MergeDelta(into[key], int64(n)) // a key's sum spans type chunks
				if !ok {
					rows.Close()
					return fmt.Errorf("%w: the window's total of %s", errs.ErrOverflow, key)
				}
				into[key] = sum
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil {
				return tables.Overflowed(err)
			}
		}
	}
	return nil
}

// AppliedKeys returns which of the records ids have key applied to counter
// recordType, one statement per 1000 ids.
func (p *Reader) AppliedKeys(db *gorm.DB, recordType string, ids []string, key string) (map[string]bool, error) {
	out := make(map[string]bool)
	now := p.now()
	for chunk := range slices.Chunk(ids, tables.LoadChunk) {
		var found []string
		tx := session.Routed(db)
		err := tx.Table(p.cfg.OnceTable).
			Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: recordType}).
			Where(clause.Eq{Column: clause.Column{Name: "op_key"}, Value: key}).
			Where(clause.IN{Column: clause.Column{Name: "record_id"}, Values: Anys(chunk)}).
			Where(Live(now)).Pluck("record_id", &found).Error
		if tx.DryRun { // rendered and logged; nothing found is not "not applied"
			return nil, errs.ErrDryRun
		}
		if err != nil {
			return nil, err
		}
		for _, id := range found {
			out[id] = true
		}
	}
	return out, nil
}

// Totals is the grouped sum the scopes join and Top ranks:
//
//	SELECT record_id AS slotted_id, SUM(count) AS slotted_total FROM slotted_counters
//	WHERE record_type IN (...) GROUP BY record_id
func (p *Reader) Totals(db *gorm.DB, types []any) *gorm.DB {
	sel := "? AS slotted_id, SUM(?) AS slotted_total"
	if p.dialect.BigResult && len(types) > 1 {
		// A window's rows come in (bucket, record) order, so MySQL groups them in a
		// temporary table; one record_type's come in record order and group as they
		// stream, which SQL_BIG_RESULT would replace by a sort of every row.
		sel = "SQL_BIG_RESULT " + sel
	}
	return session.Routed(db).Table(p.cfg.Table).
		Select(sel, clause.Column{Name: "record_id"}, clause.Column{Name: "count"}).
		Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: types}).
		Group("record_id")
}

// Scores is totals with each bucket's rows weighted:
//
//	SELECT record_id AS slotted_id, SUM(CASE record_type WHEN ? THEN ? * count ... END) AS slotted_total
//	FROM slotted_counters WHERE record_type IN (...) GROUP BY record_id
//
// The weight multiplies inside each branch: PostgreSQL types a CASE whose
// branches are all parameters as text, but `? * count` as count's bigint.
func (p *Reader) Scores(db *gorm.DB, types []string, weights []int64) *gorm.DB {
	var sb strings.Builder
	vars := make([]any, 0, 2+3*len(types))
	sb.WriteString("? AS slotted_id, SUM(CASE ?")
	vars = append(vars, clause.Column{Name: "record_id"}, clause.Column{Name: "record_type"})
	for i, t := range types {
		sb.WriteString(" WHEN ? THEN ? * ?")
		vars = append(vars, t, weights[i], clause.Column{Name: "count"})
	}
	sb.WriteString(" END) AS slotted_total")
	sel := sb.String()
	if p.dialect.BigResult && len(types) > 1 {
		sel = "SQL_BIG_RESULT " + sel // as totals: a window's rows group by sorting on MySQL
	}
	return session.Routed(db).Table(p.cfg.Table).Select(sel, vars...).
		Where(clause.IN{Column: clause.Column{Name: "record_type"}, Values: Anys(types)}).
		Group("record_id")
}
