package slotted

import (
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/query"
)

// RefTotal is a counter and its total, as TopRefs ranks them.
type RefTotal struct {
	Ref   Ref
	Total int64
}

// Top returns the n records of model's type with the largest total of a
// counter, largest first (ties: the larger primary key first), with their
// counters filled.
// db may carry conditions, which select the candidates; its Order, Limit and
// Offset are replaced by Top's:
//
//	top, err := slotted.Top(db, &Post{}, "likes", 10)                      // []Post
//	top, err = slotted.Top(db.Where("author_id = ?", 7), &Post{}, "likes", 10)
//
// It is one query (plus auto-fill's): the records ordered by OrderBy, or,
// when the counter has a cache: column, by that column, which is as fresh as
// the last RollUp but read from the parent table alone (put an index on it):
//
//	SELECT * FROM `posts` ORDER BY `posts`.`likes_count` DESC,`posts`.`id` DESC LIMIT 10
//
// Without a cache column the database sums all the counter's slot rows first:
// its cost grows with the rows of the counter, not with n (BENCHMARKS.md).
// Records without counter rows rank as 0. n < 1 is ErrInvalidArgument.
//
// Top is the first page of List with ReadAuto: fast by the cache column when
// there is one, exact otherwise. For the other path, or for pages after the
// first (offsets, cursors), call List (listing.go, docs/listings.md).
func Top[T any](db *gorm.DB, model *T, counter string, n int) ([]T, error) {
	return top(db, model, counter, n, nil)
}

// TopBetween is Top over a bucketed counter's window: the n records with the
// largest total over the buckets overlapping [from, to) ("top 10 this week"),
// ranked by OrderByBetween. The counter's field holds that window's total
// (one LoadBetween), the other counters their all-time totals.
func TopBetween[T any](db *gorm.DB, model *T, counter string, n int, from, to time.Time) ([]T, error) {
	return top(db, model, counter, n, &span{from, to})
}

func top[T any](db *gorm.DB, model *T, counter string, n int, w *span) ([]T, error) {
	_, m, c, err := rankArgs(db, model, counter, n, "Top")
	if err != nil {
		return nil, err
	}
	// The caller's Order, Limit and Offset are replaced, as List's are: Top is its first page.
	q := db.Session(&gorm.Session{}).Offset(-1) // a statement of its own, whose clauses may be dropped
	delete(q.Statement.Clauses, "ORDER BY")
	switch {
	case w == nil && c.Cache != "":
		q = q.Order(clause.OrderByColumn{Column: clause.Column{Table: clause.CurrentTable, Name: c.Cache}, Desc: true})
	case w == nil:
		q = q.Scopes(OrderBy(model, counter, "DESC"))
	default:
		q = q.Scopes(OrderByBetween(model, counter, "DESC", w.from, w.to))
	}
	var out []T
	// Ties: the larger key first, so that ORDER BY cache DESC, id DESC can walk an index on the cache column backwards.
	err = paged(q.Order(m.Key.OrderBy(clause.CurrentTable, true)), n, 0).Find(&out).Error
	if err != nil {
		return nil, err
	}
	if w != nil && len(out) > 0 {
		if err := LoadBetween(db, &out, w.from, w.to, counter); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TopRefs returns the n counters of model's counter with the largest totals,
// largest first (ties: the larger record_id, as text, first), read from the
// counter table alone:
//
//	SELECT `record_id` AS slotted_id, SUM(`count`) AS slotted_total FROM `slotted_counters`
//	WHERE `record_type` = 'posts.likes' GROUP BY `record_id` ORDER BY `slotted_total` DESC,`slotted_id` DESC LIMIT 10
//
// So it ignores db's conditions, ranks only records that have counter rows,
// and includes counters whose record was deleted without the plugin (see
// Sweep). With a cache: column it reads that column instead (SELECT id,
// likes_count FROM posts ORDER BY likes_count DESC, id DESC LIMIT 10). The Refs
// name the counter (Type "posts.likes") and carry its Slots, as RefOf does.
func TopRefs(db *gorm.DB, model any, counter string, n int) ([]RefTotal, error) {
	return topRefs(db, model, counter, n, nil)
}

// TopRefsBetween is TopRefs over a bucketed counter's window: the totals over
// the buckets overlapping [from, to); the cache column is never used.
func TopRefsBetween(db *gorm.DB, model any, counter string, n int, from, to time.Time) ([]RefTotal, error) {
	return topRefs(db, model, counter, n, &span{from, to})
}

func topRefs(db *gorm.DB, model any, counter string, n int, w *span) ([]RefTotal, error) {
	p, m, c, err := rankArgs(db, model, counter, n, "TopRefs")
	if err != nil {
		return nil, err
	}
	if w == nil && c.Cache != "" {
		return p.topCached(db, m, c, n)
	}
	types := []any{c.RecordType}
	if w != nil {
		if c.Bucket == nil {
			return nil, meta.NotBucketed(c)
		}
		buckets, err := c.Bucket.Between(w.from, w.to)
		if err != nil {
			return nil, err
		}
		types = query.Anys(c.BucketTypes(buckets))
	}
	tx := p.reads.Totals(db, types).
		Order(clause.OrderBy{Columns: []clause.OrderByColumn{{Column: clause.Column{Name: "slotted_total"}, Desc: true}, {Column: clause.Column{Name: "slotted_id"}, Desc: true}}}).
		Limit(n)
	rows, err := tx.Rows()
	if tx.DryRun {
		return nil, ErrDryRun
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RefTotal
	for rows.Next() {
		r := RefTotal{Ref: Ref{Type: c.RecordType, Slots: c.Slots}}
		if err := rows.Scan(&r.Ref.ID, &r.Total); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// topCached ranks by the cache column of the parent table.
func (p *Plugin) topCached(db *gorm.DB, m *meta.Model, c *meta.Counter, n int) ([]RefTotal, error) {
	found := reflect.New(reflect.SliceOf(m.Type))
	err := session.WithoutFill(session.Routed(db)).Model(reflect.New(m.Type).Interface()).Select(append(m.Key.Columns(), c.Cache)).
		Order(clause.OrderByColumn{Column: clause.Column{Table: clause.CurrentTable, Name: c.Cache}, Desc: true}).
		Order(m.Key.OrderBy(clause.CurrentTable, true)).
		Limit(n).Find(found.Interface()).Error
	if err != nil {
		return nil, err
	}
	var out []RefTotal
	for i := range found.Elem().Len() {
		s := found.Elem().Index(i)
		id, err := m.Key.ID(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Type, err)
		}
		r := RefTotal{Ref: Ref{Type: c.RecordType, ID: id, Slots: c.Slots}}
		if f, ok := meta.FieldAt(s, c.CacheIndex); ok {
			if f.CanInt() {
				r.Total = f.Int()
			} else {
				r.Total = int64(min(f.Uint(), 1<<63-1))
			}
		}
		out = append(out, r)
	}
	return out, nil
}
