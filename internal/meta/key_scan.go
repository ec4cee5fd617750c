package meta

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/errs"
)

// Keys read back from a statement that selected a model's key columns (the
// rankings select the keys they ranked, then load the records by them).

// keyParts is the key's columns as parts: itself for a single-column key.
func (k Key) keyParts() []Key {
	if k.Parts == nil {
		return []Key{k}
	}
	return k.Parts
}

// ColumnsIn is the key's columns qualified by table, for Select, ORDER BY and
// keyset conditions (keyset.After/Before).
func (k Key) ColumnsIn(table string) []clause.Column {
	parts := k.keyParts()
	out := make([]clause.Column, len(parts))
	for i, p := range parts {
		out[i] = clause.Column{Table: table, Name: p.Column}
	}
	return out
}

// PartsOf spreads a key value (Value's, Parse's or ScanKey's) over the key's
// columns: a composite key's value already is its parts.
func (k Key) PartsOf(v any) []any {
	if k.Parts != nil {
		return v.([]any)
	}
	return []any{v}
}

// ScanKey scans one result row whose first columns are the key's (in
// ColumnsIn's order) and the rest go to extra, and returns the key, as Value
// would give it (the parts as []any for a composite key), and its record_id.
// A part whose type has a String or Value method but no Scan is read as its
// text, which is then its value and its record_id part.
func (m *Model) ScanKey(scan func(dest ...any) error, extra ...any) (any, string, error) {
	parts := m.Key.keyParts()
	vals := make([]reflect.Value, len(parts))
	texts := make([]string, len(parts))
	dests := make([]any, 0, len(parts)+len(extra))
	for i, p := range parts {
		vals[i] = reflect.New(p.Type)
		dest := vals[i].Interface()
		if _, scanner := dest.(sql.Scanner); p.Kind == reflect.Interface && !scanner {
			vals[i], dest = reflect.Value{}, &texts[i]
		}
		dests = append(dests, dest)
	}
	if err := scan(append(dests, extra...)...); err != nil {
		return nil, "", err
	}
	holder := reflect.New(m.Type).Elem()
	values, ids := make([]any, len(parts)), make([]string, len(parts))
	for i, p := range parts {
		if !vals[i].IsValid() {
			if texts[i] == "" {
				return nil, "", fmt.Errorf("%s: key column %s: %w", m.Type, p.Column, errs.ErrMissingPrimaryKey)
			}
			values[i], ids[i] = texts[i], texts[i]
			continue
		}
		f, ok := Walk(holder, p.Index, true)
		if !ok || !f.CanSet() {
			return nil, "", fmt.Errorf("%w: %s: primary key field not settable", errs.ErrUnsupportedModel, m.Type)
		}
		f.Set(vals[i].Elem())
		values[i] = vals[i].Elem().Interface()
		id, err := p.ID(holder)
		if err != nil {
			return nil, "", fmt.Errorf("%s: key column %s: %w", m.Type, p.Column, err)
		}
		ids[i] = id
	}
	if m.Key.Parts == nil {
		return values[0], ids[0], nil
	}
	id := JoinKeyParts(ids)
	if err := CheckKey("record id", id); err != nil {
		return nil, "", fmt.Errorf("%s: %w", m.Type, err)
	}
	return values, id, nil
}

// Countable is the condition a row's key meets when the row has a record_id:
// no part at its zero value (Key.ID's ErrMissingPrimaryKey) and the record_id
// at most MaxKeyLen bytes (CheckKey). AddWhere and List filter with it, so a
// row that every other call refuses is passed over instead of failing the
// whole statement, or, on SQLite, being counted under an id no call can name.
func (k Key) Countable(d dialect.Dialect, table string) clause.Expression {
	parts := k.keyParts()
	var conds []string
	var vars []any
	short := len(parts)*21 <= errs.MaxKeyLen // 20 digits and a comma a part
	for _, p := range parts {
		col := clause.Column{Table: table, Name: p.Column}
		switch {
		case p.Kind >= reflect.Int && p.Kind <= reflect.Uint64:
			conds, vars = append(conds, "? <> 0"), append(vars, col)
		case p.Kind == reflect.String:
			conds, vars = append(conds, "? <> ''"), append(vars, col)
			short = false
		default:
			short = false
		}
	}
	if !short {
		id, idVars := k.TextSQL(d, table)
		conds = append(conds, d.OctetLength(id)+" <= ?")
		vars = append(append(vars, idVars...), errs.MaxKeyLen)
	}
	return clause.Expr{SQL: strings.Join(conds, " AND "), Vars: vars}
}
