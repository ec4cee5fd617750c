package slotted

import (
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/keyset"
	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"
)

// keysetPages walks model m's records in primary-key order, size keys a page,
// after the key after (nil: from the start), and calls visit with each page
// (a slice of m's type holding only the keys) and its last key, until a short
// page. The pages decide what RollUpAll and FixAll write, so they are read on
// the primary, with the caller's dbresolver.Use kept (a lagging replica would
// skip records created since its last replay). scope narrows the records.
//
//	SELECT id FROM posts [WHERE <scope>] AND posts.id > ? ORDER BY posts.id LIMIT 500
func keysetPages(db *gorm.DB, m *meta.Model, d dialect.Dialect, size int, after any, scope func(*gorm.DB) *gorm.DB, visit func(page reflect.Value, last any) error) error {
	pk := m.Key.ColumnsIn(clause.CurrentTable)
	var start []any
	if after != nil {
		start = m.Key.PartsOf(after)
	}
	read := func(after []any) (reflect.Value, int, []any, error) {
		page := reflect.New(reflect.SliceOf(m.Type))
		q := session.WithoutFill(session.Primary(db, m.Table)).Model(reflect.New(m.Type).Interface()).Select(m.Key.Columns()).
			Order(m.Key.OrderBy(clause.CurrentTable, false)).Limit(size)
		if scope != nil {
			q = scope(q)
		}
		if after != nil {
			q = q.Where(keyset.After(pk, after, d.RowCompare)) // the expanded form where a row comparison is no index range
		}
		if err := q.Find(page.Interface()).Error; err != nil {
			return page, 0, nil, err
		}
		n := page.Elem().Len()
		if n == 0 {
			return page, 0, nil, nil
		}
		return page.Elem(), n, m.Key.PartsOf(m.Key.Value(page.Elem().Index(n - 1))), nil
	}
	return keyset.Walk(session.Context(db), size, start, read, func(page reflect.Value, last []any) error {
		if m.Key.Parts != nil {
			return visit(page, last)
		}
		return visit(page, last[0])
	})
}
