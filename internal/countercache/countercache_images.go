package countercache

import (
	"database/sql"
	"fmt"
	"math"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/write"

	"github.com/slotted-go/slotted/internal/errs"
)

// Images: what a child row counts, read from the database (readImages) or
// from a new record in memory (memoryImage, fromMaps), summed per parent
// (contribute) and written (applyDeltas).

// deltas sums the changes per parent counter.
type deltas map[deltaKey]int64

type deltaKey struct {
	c  *counterCache
	id string
}

// image is one child row as its caches see it.
type image struct {
	fks   []any
	sums  []any
	alive bool   // not soft-deleted
	flags []bool // the conditions' values; nil: evaluate Match on the record
	// totals are the row's totals of the counters SumCounter caches add up
	// (or, when propagating, their changes); only those caches count when
	// propagating.
	totals      []int64
	propagating bool
}

// readImages selects child rows (scope) with their image columns, FOR UPDATE,
// adds sign times their contributions to op.deltas and appends their primary
// keys to op.keys. Soft-deleted rows are read unless scoped.
//
//	SELECT `comments`.`id`, `comments`.`post_id`, `comments`.`deleted_at`, CASE WHEN (published = true) THEN 1 ELSE 0 END
//	FROM `comments` WHERE <the statement's conditions> [AND `comments`.`deleted_at` IS NULL] FOR UPDATE
func (p *Caches) readImages(db *gorm.DB, cc *childCaches, op *cacheOp, sign int64, unscoped bool, scope func(*gorm.DB) *gorm.DB) error {
	var sel strings.Builder
	var vars []any
	col := func(name string) {
		if sel.Len() > 0 {
			sel.WriteString(", ")
		}
		sel.WriteString("?")
		vars = append(vars, clause.Column{Table: clause.CurrentTable, Name: name})
	}
	for _, name := range cc.key.Columns() {
		col(name)
	}
	for _, f := range cc.fks {
		col(f.DBName)
	}
	for _, f := range cc.sums {
		col(f.DBName)
	}
	if cc.deleted != nil {
		col(cc.deleted.DBName)
	}
	for _, cond := range cc.flags {
		sel.WriteString(", CASE WHEN (?) THEN 1 ELSE 0 END")
		vars = append(vars, *cond)
	}
	if op.recheck != nil {
		sel.WriteString(", CASE WHEN (?) THEN 1 ELSE 0 END")
		vars = append(vars, op.recheck)
	}
	q := session.WithoutFill(session.Routed(db)).Model(reflect.New(cc.schema.ModelType).Interface()).Select(sel.String(), vars...)
	if unscoped {
		q = q.Unscoped()
	}
	q = scope(q)
	if p.dialect.LockingReads {
		q = q.Clauses(p.lockingClause(op.share))
	}
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	dest := make([]any, 0, len(vars))
	keyDests := cc.keyDests()
	dest = append(dest, keyDests...)
	// Pointers to pointers: a NULL (a column a raw INSERT left out) scans as nil.
	for _, f := range cc.fks {
		dest = append(dest, nullable(f))
	}
	for _, f := range cc.sums {
		dest = append(dest, nullable(f))
	}
	if cc.deleted != nil {
		dest = append(dest, nullable(cc.deleted))
	}
	flags := make([]int64, len(cc.flags))
	for i := range flags {
		dest = append(dest, &flags[i])
	}
	var matches int64
	if op.recheck != nil {
		dest = append(dest, &matches)
	}
	var pending []image
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if op.recheck != nil && matches == 0 {
			continue // left the statement's conditions before it was locked: not changed, not counted
		}
		img := image{alive: true, flags: make([]bool, len(flags))}
		i := len(keyDests)
		for range cc.fks {
			img.fks = append(img.fks, scanned(dest[i]))
			i++
		}
		for range cc.sums {
			img.sums = append(img.sums, scanned(dest[i]))
			i++
		}
		if cc.deleted != nil {
			d := scanned(dest[i])
			img.alive = d == nil || reflect.ValueOf(d).IsZero()
		}
		for j, f := range flags {
			img.flags[j] = f != 0
		}
		op.keys = append(op.keys, cc.scannedKey(keyDests))
		if len(cc.totals) > 0 {
			pending = append(pending, img) // counted once the totals are read
			continue
		}
		if err := cc.contribute(op.deltas, img, sign, reflect.Value{}); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil || len(pending) == 0 {
		return err
	}
	rows.Close()
	return p.contributeTotals(db, cc, op, sign, pending, op.keys[len(op.keys)-len(pending):])
}

// nullable returns a scan destination for a field's column that accepts NULL.
func nullable(f *schema.Field) any { return reflect.New(reflect.PointerTo(f.FieldType)).Interface() }

// scanned reads a nullable destination: nil for NULL, else the field's value.
func scanned(dest any) any {
	p := reflect.ValueOf(dest).Elem()
	if p.IsNil() {
		return nil
	}
	return p.Elem().Interface()
}

// memoryImage is a new record's image, read from the struct gorm inserted.
func (cc *childCaches) memoryImage(db *gorm.DB, v reflect.Value) image {
	ctx := db.Statement.Context
	img := image{alive: true, fks: make([]any, len(cc.fks)), sums: make([]any, len(cc.sums)), totals: make([]int64, len(cc.totals))}
	for i, f := range cc.fks {
		img.fks[i], _ = f.ValueOf(ctx, v)
	}
	for i, f := range cc.sums {
		img.sums[i], _ = f.ValueOf(ctx, v)
	}
	if cc.deleted != nil {
		_, img.alive = cc.deleted.ValueOf(ctx, v)
	}
	return img
}

// contribute adds sign times what one child row counts in each cache.
func (cc *childCaches) contribute(d deltas, img image, sign int64, record reflect.Value) error {
	if !img.alive && !cc.withDeleted {
		return nil
	}
	for _, c := range cc.caches {
		if !img.alive && !c.deleted {
			continue
		}
		if c.where != nil {
			if img.flags != nil {
				if !img.flags[c.flagAt] {
					continue
				}
			} else if !c.match(record) {
				continue
			}
		}
		id, ok, err := c.fkIDOf(img.fks)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		amount := int64(1)
		switch {
		case c.through != nil:
			if amount = img.totals[c.totalAt]; amount == 0 {
				continue // a new record's counter, or no change to propagate
			}
		case img.propagating:
			continue
		case c.sum != nil:
			if amount, err = toInt64(img.sums[c.sumAt]); err != nil {
				return err
			}
		}
		n, ok := write.ScaleDelta(amount, c.weight)
		if ok && sign < 0 {
			n, ok = -n, n != math.MinInt64
		}
		if !ok {
			return errs.ErrOverflow
		}
		if err := d.add(c, id, n, 1); err != nil {
			return err
		}
	}
	return nil
}

// add adds n times weight to c's delta for the parent id, or returns
// ErrOverflow (changing nothing) when that leaves int64.
func (d deltas) add(c *counterCache, id string, n, weight int64) error {
	n, ok := write.ScaleDelta(n, weight)
	if ok {
		n, ok = write.MergeDelta(d[deltaKey{c, id}], n)
	}
	if !ok {
		return errs.ErrOverflow
	}
	d[deltaKey{c, id}] = n
	return nil
}

// addRows adds the (foreign key, count) rows of a counting query, times
// weight, to c's deltas: Fix's count of a cache's children, or of a
// multi-level cache through its chain.
func (d deltas) addRows(rows *sql.Rows, c *counterCache, weight int64) error {
	defer rows.Close()
	for rows.Next() {
		fkv := nullable(c.fk)
		var n int64
		if err := rows.Scan(fkv, &n); err != nil {
			return err
		}
		id, ok, err := fkID(scanned(fkv))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := d.add(c, id, n, weight); err != nil {
			return err
		}
	}
	return rows.Err()
}

// assignedColumns lists the columns an UPDATE may set; known is false when
// they cannot be told from the statement (an explicit SET, Select("*"), a
// map key naming an association).
func assignedColumns(s *gorm.Statement) (cols map[string]bool, known bool) {
	if _, ok := s.Clauses["SET"]; ok {
		return nil, false
	}
	cols = map[string]bool{}
	name := func(n string) bool {
		if f := s.Schema.LookUpField(n); f != nil {
			if f.DBName == "" {
				return false
			}
			cols[f.DBName] = true
			return true
		}
		cols[n] = true
		return true
	}
	if len(s.Selects) > 0 {
		for _, n := range s.Selects {
			if n == "*" || !name(n) {
				return nil, false
			}
		}
		return cols, true
	}
	dest := reflect.ValueOf(s.Dest)
	for dest.Kind() == reflect.Pointer && !dest.IsNil() {
		dest = dest.Elem()
	}
	switch dest.Kind() {
	case reflect.Map:
		m, ok := s.Dest.(map[string]any)
		if !ok {
			return nil, false
		}
		for k := range m {
			if !name(k) {
				return nil, false
			}
		}
		return cols, true
	case reflect.Struct:
		if dest.Type() != s.Schema.ModelType {
			return nil, false
		}
		for _, f := range s.Schema.Fields {
			if f.DBName == "" {
				continue
			}
			if _, zero := f.ValueOf(s.Context, dest); !zero {
				cols[f.DBName] = true
			}
		}
		return cols, true
	}
	return nil, false
}

func touches(cols, watched map[string]bool) bool {
	for c := range cols {
		if watched[c] {
			return true
		}
	}
	return false
}

// fromMaps turns a Create's maps into child structs, so that they are counted
// as structs are. A value gorm cannot store in the field (a gorm.Expr), an
// upsert, or a condition without Match cannot be known without reading the
// rows back by a key the maps may not hold: such a Create is refused.
func (cc *childCaches) fromMaps(db *gorm.DB, upsert bool) ([]reflect.Value, error) {
	s := db.Statement
	if upsert || cc.selectOnCreate {
		return nil, fmt.Errorf("%w: create %s from structs: an upsert or a condition without Match is read back by primary key", errs.ErrUnsupportedModel, s.Schema.Name)
	}
	var out []reflect.Value
	var each func(v reflect.Value) error
	each = func(v reflect.Value) error {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return nil
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				if err := each(v.Index(i)); err != nil {
					return err
				}
			}
		case reflect.Map:
			rec := reflect.New(s.Schema.ModelType).Elem()
			for _, k := range v.MapKeys() {
				name, ok := k.Interface().(string)
				f := s.Schema.LookUpField(name)
				if !ok || f == nil || f.DBName == "" {
					continue
				}
				val := v.MapIndex(k).Interface()
				err := f.Set(s.Context, rec, val)
				if _, isExpr := val.(clause.Expression); isExpr && err == nil {
					err = fmt.Errorf("an SQL expression") // gorm's Set skips it silently
				}
				if err != nil && (cc.watched == nil || cc.watched[f.DBName]) {
					return fmt.Errorf("%w: %s.%s: %v cannot be counted; create it from a struct", errs.ErrUnsupportedModel, s.Schema.Name, f.Name, err)
				}
			}
			out = append(out, rec)
		}
		return nil
	}
	if err := each(s.ReflectValue); err != nil {
		return nil, err
	}
	return out, nil
}
