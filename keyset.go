package slotted

import (
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// keysetPages walks model m's records in primary-key order, size keys a page,
// after the key after (nil: from the start), and calls visit with each page
// (a slice of m's type holding only the keys) and its last key, until a short
// page. The pages decide what RollUpAll and FixAll write, so they are read on
// the primary, with the caller's dbresolver.Use kept (a lagging replica would
// skip records created since its last replay). scope narrows the records.
//
//	SELECT id FROM posts [WHERE <scope>] AND posts.id > ? ORDER BY posts.id LIMIT 500
func keysetPages(db *gorm.DB, m *modelMeta, size int, after any, scope func(*gorm.DB) *gorm.DB, visit func(page reflect.Value, last any) error) error {
	ctx := contextOf(db)
	pk := any(clause.Column{Table: clause.CurrentTable, Name: m.key.column})
	if m.key.parts != nil { // (a, b) > (?, ?): a row comparison, on every dialect
		cols := make([]clause.Column, 0, len(m.key.parts))
		for _, c := range m.key.columns() {
			cols = append(cols, clause.Column{Table: clause.CurrentTable, Name: c})
		}
		pk = cols
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page := reflect.New(reflect.SliceOf(m.typ))
		q := WithoutFill(primary(db, m.table)).Model(reflect.New(m.typ).Interface()).Select(m.key.columns()).
			Order(m.key.orderBy(clause.CurrentTable, false)).Limit(size)
		if scope != nil {
			q = scope(q)
		}
		if after != nil {
			q = q.Where(clause.Gt{Column: pk, Value: after})
		}
		if err := q.Find(page.Interface()).Error; err != nil {
			return err
		}
		n := page.Elem().Len()
		if n == 0 {
			return nil
		}
		after = m.key.value(page.Elem().Index(n - 1))
		if err := visit(page.Elem(), after); err != nil {
			return err
		}
		if n < size {
			return nil
		}
	}
}
