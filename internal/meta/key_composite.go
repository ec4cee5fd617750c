package meta

import (
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/errs"
)

// Composite primary keys (docs/composite-keys.md). A key of several columns
// is written to record_id as its parts, each formatted as a single-column key
// is (decimal integers, strings as they are, String/Value methods), joined by
// ',' after '%' and ',' inside a part are written %25 and %2C:
//
//	(7, 42)          -> "7,42"
//	("a,b", "50%")   -> "a%2Cb,50%25"
//
// No part of an encoded key holds a ',', so splitting on ',' finds the parts,
// and each escape has one reading, so every record_id names at most one key
// tuple and Sweep and the delete cleanup can turn it back into the columns.
// A single-column key keeps its form (no escaping): existing counters stay
// valid, and no composite record_id is confused with one because the model
// decides which form its ids have.
//
// Order: the byte order of the encoding is not the tuple order (",", "%" and
// digits sort as bytes, "10" < "9"), and nothing needs it to be: every
// multi-counter transaction locks its rows in record_id byte order
// (CompareRefs), a total order because the encoding is one-to-one.

var keyEscaper = strings.NewReplacer("%", "%25", ",", "%2C")

// newCompositeKey is the record key of a primary key of several columns.
func newCompositeKey(s *schema.Schema) (Key, error) {
	k := Key{Kind: reflect.Invalid, Parts: make([]Key, 0, len(s.PrimaryFields))}
	for _, f := range s.PrimaryFields {
		part, err := newKeyPart(s, f)
		if err != nil {
			return Key{}, err
		}
		k.Parts = append(k.Parts, part)
	}
	return k, nil
}

// RowKey is the key of a table's rows by their primary-key fields, one or
// several, for selecting, ordering and restricting rows (In, OrderBy,
// Columns): a counter cache's children, whose keys never become a record_id,
// so no part type is refused.
func RowKey(fields []*schema.Field) Key {
	part := func(f *schema.Field) Key {
		return Key{Column: f.DBName, Index: f.StructField.Index, Type: f.FieldType, Kind: f.FieldType.Kind()}
	}
	if len(fields) == 1 {
		return part(fields[0])
	}
	k := Key{Kind: reflect.Invalid, Parts: make([]Key, len(fields))}
	for i, f := range fields {
		k.Parts[i] = part(f)
	}
	return k
}

// joinKeyParts encodes formatted parts as one record_id.
func JoinKeyParts(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		_, _ = keyEscaper.WriteString(&b, p)
	}
	return b.String()
}

// SplitKeyID returns the parts of a composite key's record_id (a Ref.ID from
// TopRefs, say), as text: "a%2Cb,50%25" is ["a,b", "50%"]. An id that no
// key encodes (a '%' not followed by 25 or 2C) is errs.ErrUnsupportedKey. An id
// without ',' is one part: a single-column key's id is returned whole.
func SplitKeyID(id string) ([]string, error) {
	raw := strings.Split(id, ",")
	out := make([]string, len(raw))
	for i, r := range raw {
		p, ok := unescapeKeyPart(r)
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a composite key's record_id", errs.ErrUnsupportedKey, id)
		}
		out[i] = p
	}
	return out, nil
}

// unescapeKeyPart reads one part; only the two escapes the encoder writes are
// accepted, so that no two ids decode to the same part.
func unescapeKeyPart(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(s[i:], "%2C"):
			b.WriteByte(',')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// compositeID is Key.id for a composite key: every part must be set.
func (k Key) compositeID(v reflect.Value) (string, error) {
	parts := make([]string, len(k.Parts))
	for i, p := range k.Parts {
		id, err := p.ID(v)
		if err != nil {
			return "", fmt.Errorf("key column %s: %w", p.Column, err)
		}
		parts[i] = id
	}
	id := JoinKeyParts(parts)
	if err := CheckKey("record id", id); err != nil {
		return "", err
	}
	return id, nil
}

// compositeValue is Key.value: the key's column values, as one row
// value to bind ((a, b) IN ((?, ?), ...)).
func (k Key) compositeValue(v reflect.Value) any {
	out := make([]any, len(k.Parts))
	for i, p := range k.Parts {
		out[i] = p.Value(v)
	}
	return out
}

// compositeParse is Key.parse: ok is false for an id of another form or
// with another number of parts, which no record of the model can have.
func (k Key) compositeParse(id string) (any, bool) {
	parts, err := SplitKeyID(id)
	if err != nil || len(parts) != len(k.Parts) {
		return nil, false
	}
	out := make([]any, len(parts))
	for i, p := range k.Parts {
		v, ok := p.Parse(parts[i])
		if !ok || parts[i] == "" {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// eachPart applies a check to every part of a composite key.
func (k Key) eachPart(check func(Key) error) error {
	for _, p := range k.Parts {
		if err := check(p); err != nil {
			return err
		}
	}
	return nil
}

// columns names the key's columns, for Select.
func (k Key) Columns() []string {
	if k.Parts == nil {
		return []string{k.Column}
	}
	out := make([]string, len(k.Parts))
	for i, p := range k.Parts {
		out[i] = p.Column
	}
	return out
}

// in is "key IN (keys)" for keys from value or parse: a row comparison
// (a, b) IN ((?, ?), ...) for a composite key.
func (k Key) In(table string, keys []any) clause.Expression {
	if k.Parts == nil {
		return clause.IN{Column: clause.Column{Table: table, Name: k.Column}, Values: keys}
	}
	switch len(keys) {
	case 0:
		// gorm writes an empty IN as "IN (NULL)", one term, which a row of
		// several is not compared with (SQLite refuses the statement).
		return clause.Expr{SQL: "1 = 0"}
	case 1:
		// Column by column: MariaDB 10.11 plans an UPDATE or DELETE with a
		// one-row (a, b) IN ((?, ?)) as a full scan (EXPLAIN: type index /
		// ALL), locking every row; with several rows, or as equalities, it
		// is a range on the key.
		parts := keys[0].([]any)
		eqs := make([]clause.Expression, len(k.Parts))
		for i, p := range k.Parts {
			eqs[i] = clause.Eq{Column: clause.Column{Table: table, Name: p.Column}, Value: parts[i]}
		}
		return clause.And(eqs...)
	}
	cols := make([]clause.Column, len(k.Parts))
	for i, p := range k.Parts {
		cols[i] = clause.Column{Table: table, Name: p.Column}
	}
	return clause.IN{Column: cols, Values: keys}
}

// eq is "key = the key of v", column by column.
func (k Key) Eq(table string, v reflect.Value) clause.Expression {
	if k.Parts == nil {
		return clause.Eq{Column: clause.Column{Table: table, Name: k.Column}, Value: k.Value(v)}
	}
	eqs := make([]clause.Expression, len(k.Parts))
	for i, p := range k.Parts {
		eqs[i] = p.Eq(table, v)
	}
	return clause.And(eqs...)
}

// orderBy sorts by the key's columns.
func (k Key) OrderBy(table string, desc bool) clause.OrderBy {
	var out clause.OrderBy
	for _, col := range k.Columns() {
		out.Columns = append(out.Columns, clause.OrderByColumn{Column: clause.Column{Table: table, Name: col}, Desc: desc})
	}
	return out
}

// textSQL is the SQL of the key's record_id computed from its columns in
// table, for joins against record_id, and its vars (the columns): a cast to
// text unless the column is a string, and for a composite key the parts
// escaped with REPLACE and joined as joinKeyParts does. Only keys that pass
// textual() have their record_id as the database's text form.
func (k Key) TextSQL(d dialect.Dialect, table string) (string, []any) {
	if k.Parts == nil {
		col := clause.Column{Table: table, Name: k.Column}
		if k.Kind == reflect.String {
			return "?", []any{col}
		}
		return "CAST(? AS " + d.TextType + ")", []any{col}
	}
	sqls := make([]string, len(k.Parts))
	vars := make([]any, 0, len(k.Parts))
	for i, p := range k.Parts {
		s, v := p.TextSQL(d, table)
		// '%' first, so the '%' of %2C is not escaped again; constants, not user values.
		sqls[i] = "REPLACE(REPLACE(" + s + ", '%', '%25'), ',', '%2C')"
		vars = append(vars, v...)
	}
	return d.ConcatComma(sqls), vars
}

// IDOf is the record_id of the record whose primary key is parts, in the
// order of the model's primary-key fields (RefOfKey): each part is converted
// to its field's type and formatted as the model's records are.
func (m *Model) IDOf(parts []any) (string, error) {
	keys := m.Key.Parts
	if keys == nil {
		keys = []Key{m.Key}
	}
	if len(parts) != len(keys) {
		return "", fmt.Errorf("%w: %s has %d primary-key columns, got %d parts", errs.ErrUnsupportedKey, m.Type, len(keys), len(parts))
	}
	v := reflect.New(m.Type).Elem()
	for i, k := range keys {
		if err := SetKeyPart(v, k, parts[i]); err != nil {
			return "", fmt.Errorf("%s key part %d (%s): %w", m.Type, i, k.Column, err)
		}
	}
	id, err := m.Key.ID(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.Type, err)
	}
	return id, nil
}

// SetKeyPart stores part in the key field of struct v.
func SetKeyPart(v reflect.Value, k Key, part any) error {
	pv := reflect.ValueOf(part)
	if !pv.IsValid() || (pv.Kind() == reflect.Pointer && pv.IsNil()) {
		return errs.ErrMissingPrimaryKey
	}
	f, ok := Walk(v, k.Index, true)
	if !ok || !f.CanSet() {
		return fmt.Errorf("%w: primary key field not settable", errs.ErrUnsupportedKey)
	}
	ft := f.Type()
	switch {
	case pv.Type() == ft:
		f.Set(pv)
		return nil
	case isIntKind(pv.Kind()) && isIntKind(ft.Kind()):
		if !fitsInt(pv, ft) {
			return fmt.Errorf("%w: %v does not fit a %s", errs.ErrUnsupportedKey, part, ft)
		}
		f.Set(pv.Convert(ft))
		return nil
	case pv.Kind() == reflect.String && ft.Kind() == reflect.String:
		f.Set(pv.Convert(ft))
		return nil
	}
	return fmt.Errorf("%w: a %T part for a %s column", errs.ErrUnsupportedKey, part, ft)
}

func isIntKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64
}

// fitsInt reports whether integer pv converts to type t without changing value.
func fitsInt(pv reflect.Value, t reflect.Type) bool {
	z := reflect.New(t).Elem()
	if pv.CanInt() {
		n := pv.Int()
		if z.CanInt() {
			return !z.OverflowInt(n)
		}
		return n >= 0 && !z.OverflowUint(uint64(n))
	}
	n := pv.Uint()
	if z.CanUint() {
		return !z.OverflowUint(n)
	}
	return n <= 1<<63-1 && !z.OverflowInt(int64(n))
}

// unset reports whether v's key is not (fully) set, as on a record an INSERT
// has yet to give a key.
func (k Key) Unset(v reflect.Value) bool {
	if k.Parts != nil {
		for _, p := range k.Parts {
			if p.Unset(v) {
				return true
			}
		}
		return false
	}
	f, ok := FieldAt(v, k.Index)
	return !ok || f.IsZero()
}
