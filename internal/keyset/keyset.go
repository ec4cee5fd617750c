// Package keyset is the one pager of every walk over a table: RollUpAll and
// FixAll over a model's records, CompactAll over crowded counters, Sweep over
// record ids, bucket retention over a bucket's slot rows and the once-key
// prune. Each page is read after the last key of the one before (never by
// OFFSET), so a walk costs the same at its end as at its start, and stopping
// it anywhere loses nothing: the caller resumes after the last key it saw.
package keyset

import (
	"context"

	"gorm.io/gorm/clause"
)

// Walk reads pages of at most size rows in key order and calls visit with
// each, until a page comes back short. read gets the last key of the page
// before (nil for the first page) and returns its page, how many rows it
// holds, and its last key. The context is checked before every page.
func Walk[P any](ctx context.Context, size int, after []any, read func(after []any) (page P, n int, last []any, err error), visit func(page P, last []any) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, n, last, err := read(after)
		if err != nil || n == 0 {
			return err
		}
		if err := visit(page, last); err != nil {
			return err
		}
		if n < size {
			return nil
		}
		after = last
	}
}

// After is the condition "the row's key comes after key", for a key of one
// or more columns compared in order. With rowCompare (the database reads a
// row comparison as one index condition: dialect.Dialect.RowCompare) it is
// (a, b) > (?, ?); elsewhere it is spelled out, a > ? OR (a = ? AND b > ?),
// which MySQL also resolves as a range on the index.
func After(cols []clause.Column, key []any, rowCompare bool) clause.Expression {
	return beyond(cols, key, rowCompare, false)
}

// Before is After for a walk in descending key order (a listing sorted
// largest first): (a, b) < (?, ?), or a < ? OR (a = ? AND b < ?).
func Before(cols []clause.Column, key []any, rowCompare bool) clause.Expression {
	return beyond(cols, key, rowCompare, true)
}

func beyond(cols []clause.Column, key []any, rowCompare, desc bool) clause.Expression {
	past := func(c clause.Column, v any) clause.Expression {
		if desc {
			return clause.Lt{Column: c, Value: v}
		}
		return clause.Gt{Column: c, Value: v}
	}
	if len(cols) == 1 {
		return past(cols[0], key[0])
	}
	if rowCompare {
		sql, vars := "(", make([]any, 0, 2*len(cols))
		for i, c := range cols {
			if i > 0 {
				sql += ", "
			}
			sql += "?"
			vars = append(vars, c)
		}
		if desc {
			sql += ") < ("
		} else {
			sql += ") > ("
		}
		for i := range key {
			if i > 0 {
				sql += ", "
			}
			sql += "?"
		}
		return clause.Expr{SQL: sql + ")", Vars: append(vars, key...)}
	}
	// a > ? OR (a = ? AND (b > ? OR ...))
	return clause.Or(past(cols[0], key[0]),
		clause.And(clause.Eq{Column: cols[0], Value: key[0]}, beyond(cols[1:], key[1:], false, desc)))
}

// Order is ORDER BY the key's columns, ascending.
func Order(cols []clause.Column) clause.OrderBy {
	by := clause.OrderBy{Columns: make([]clause.OrderByColumn, len(cols))}
	for i, c := range cols {
		by.Columns[i] = clause.OrderByColumn{Column: c}
	}
	return by
}
