package countercache

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/errs"
)

// Counter caches: a parent's slotted counter kept equal to the number (or a
// column's sum) of its children by the plugin's callbacks, in the same
// transaction as each change of a child.
//
//	type Post struct {
//		ID            uint
//		Comments      []Comment                          // the has-many gorm already knows
//		CommentsCount int64 `gorm:"-" slotted:"comments"` // a normal slotted counter
//	}
//	type Comment struct {
//		ID        uint
//		PostID    uint `gorm:"index"`
//		Published bool
//		DeletedAt gorm.DeletedAt
//	}
//
//	slotted.CounterCache(db, &Post{}, "Comments", "comments") // once, after db.Use
//
// The declaration names a relationship gorm parsed (schema.Relationships):
// a has-many or has-one of the parent (polymorphic ones too, see
// countercache_polymorphic.go), or a belongs-to of the child
// (slotted.CounterCache(db, &Comment{}, "Post", "comments")), and the
// parent's counter. The foreign key comes from gorm's relationship.

// Spec is one declaration's options, built by the root from
// slotted.CacheOptions (whose fields document them); Match takes an
// addressable value of MatchType, the child model.
type Spec struct {
	Where       *clause.Expr
	Match       func(reflect.Value) bool
	MatchType   reflect.Type
	Sum         string
	Weight      int64
	WithDeleted bool
	Touch       bool
	SumCounter  string // SumCounter: a counter of the child (countercache_multilevel.go)
}

// counterCache is one parent counter maintained from one child table.
type counterCache struct {
	parent  *meta.Model
	counter *meta.Counter
	child   *childCaches
	fk      *schema.Field // the child's foreign key, referencing the parent's primary key
	sum     *schema.Field // nil: count the children
	where   *clause.Expr  // nil: every live child
	match   func(reflect.Value) bool
	weight  int64         // what one child counts (Weight), 1 by default
	deleted bool          // soft-deleted children count too (WithDeleted)
	touch   *schema.Field // the parent's auto-update time column (Touch), or nil
	fkAt    int           // the foreign key's position among the image's foreign key columns
	sumAt   int           // the sum column's position among the image's sum columns
	flagAt  int           // the condition's position among the image's condition flags
	// through is the child's counter this cache adds up (SumCounter), or nil;
	// totalAt is its position among the image's totals.
	through *meta.Counter
	totalAt int

	// A composite foreign key (countercache_composite.go): its columns in the
	// parent key's order, and their positions among the image's foreign key
	// columns; nil for a single column.
	fkParts []*schema.Field
	fkAts   []int

	// A many-to-many cache (countercache_many2many.go) counts join rows: its
	// column (fk is its field) and the column's position in the pair.
	joinCol string
	joinAt  int
	far     *farSide // the other side, when its soft-deleted rows' join rows do not count
}

// childCaches is everything the callbacks need about one child model: its
// counter caches and the columns an image of one of its rows reads.
type childCaches struct {
	schema *schema.Schema
	// key is the primary key, one column or several (meta.RowKey): images
	// are selected, ordered, locked and restricted by it; keyFields are its
	// fields in the same order.
	key       meta.Key
	keyFields []*schema.Field
	deleted   *schema.Field // soft-delete field (gorm.DeletedAt and the like), or nil
	caches    []*counterCache
	fks       []*schema.Field // distinct foreign key columns
	sums      []*schema.Field // distinct sum columns
	flags     []*clause.Expr  // conditions, one flag column each
	totals    []*meta.Counter // distinct counters of the child that caches add up (SumCounter)
	// watched are the columns whose change can move a count; nil when a
	// condition makes every update a candidate.
	watched map[string]bool
	// selectOnCreate: some condition has no Match, so a Create reads its
	// rows back to let the database evaluate it.
	selectOnCreate bool
	// withDeleted: some cache counts soft-deleted rows, so a soft delete is
	// read again after its UPDATE, as an update is.
	withDeleted bool
}

// cacheRegistry holds the declared counter caches; lookups are lock-free.
type cacheRegistry struct {
	mu        sync.Mutex
	byChild   sync.Map // reflect.Type -> *childCaches (replaced, never changed, on registration)
	byCounter sync.Map // *meta.Counter -> *counterCache

	summed atomic.Bool // some cache adds up another's counter (SumCounter): deltas propagate

	byJoin sync.Map    // join table name -> *joinCaches (many-to-many)
	sides  sync.Map    // reflect.Type -> []sideLink: the join tables a hard delete of the model empties
	fars   sync.Map    // reflect.Type -> []farLink: the join tables whose counts a soft delete of the model moves
	joins  atomic.Bool // some many-to-many cache is declared
}

func (p *Caches) childCachesOf(typ reflect.Type) *childCaches {
	if c, ok := p.caches.byChild.Load(typ); ok {
		return c.(*childCaches)
	}
	return nil
}

func (p *Caches) cacheOf(c *meta.Counter) *counterCache {
	if cc, ok := p.caches.byCounter.Load(c); ok {
		return cc.(*counterCache)
	}
	return nil
}

// newChildCaches lays out the image columns of a child's caches. The caches
// are fresh copies: a registration never changes what a running callback reads.
func newChildCaches(s *schema.Schema, caches []*counterCache) *childCaches {
	cc := &childCaches{schema: s, key: meta.RowKey(s.PrimaryFields), keyFields: s.PrimaryFields, watched: map[string]bool{}}
	for _, f := range s.Fields {
		if f.DBName == "" {
			continue
		}
		if _, ok := reflect.New(f.IndirectFieldType).Interface().(schema.DeleteClausesInterface); ok {
			cc.deleted = f
			cc.watched[f.DBName] = true
		}
	}
	pos := func(list *[]*schema.Field, f *schema.Field) int {
		for i, g := range *list {
			if g == f {
				return i
			}
		}
		*list = append(*list, f)
		return len(*list) - 1
	}
	for _, c := range caches {
		c := *c
		c.child = cc
		c.fkAt = pos(&cc.fks, c.fk)
		cc.withDeleted = cc.withDeleted || c.deleted
		cc.watched[c.fk.DBName] = true
		c.fkAts = nil
		for _, f := range c.fkParts {
			c.fkAts = append(c.fkAts, pos(&cc.fks, f))
			cc.watched[f.DBName] = true
		}
		if c.sum != nil {
			c.sumAt = pos(&cc.sums, c.sum)
			cc.watched[c.sum.DBName] = true
		}
		if c.through != nil {
			c.totalAt = slices.Index(cc.totals, c.through)
			if c.totalAt < 0 {
				c.totalAt, cc.totals = len(cc.totals), append(cc.totals, c.through)
			}
		}
		if c.where != nil {
			c.flagAt = len(cc.flags)
			cc.flags = append(cc.flags, c.where)
			cc.selectOnCreate = cc.selectOnCreate || c.match == nil
		}
		cc.caches = append(cc.caches, &c)
	}
	if len(cc.flags) > 0 {
		cc.watched = nil // a condition may read any column
	}
	return cc
}

// keyOf returns the primary key of child struct v as Key.In binds it (a
// composite key's parts as []any); ok is false when every part is zero, the
// structs gorm's own primary-key conditions pass over.
func (cc *childCaches) keyOf(ctx context.Context, v reflect.Value) (k any, ok bool) {
	if len(cc.keyFields) == 1 {
		k, zero := cc.keyFields[0].ValueOf(ctx, v)
		return k, !zero
	}
	parts := make([]any, len(cc.keyFields))
	for i, f := range cc.keyFields {
		var zero bool
		parts[i], zero = f.ValueOf(ctx, v)
		ok = ok || !zero
	}
	return parts, ok
}

// keyDests returns scan destinations for the key's columns (key.Columns()
// order); scannedKey turns them into a key as keyOf returns it.
func (cc *childCaches) keyDests() []any {
	dests := make([]any, len(cc.keyFields))
	for i, f := range cc.keyFields {
		dests[i] = reflect.New(f.FieldType).Interface()
	}
	return dests
}

func (cc *childCaches) scannedKey(dests []any) any {
	if len(dests) == 1 {
		return reflect.ValueOf(dests[0]).Elem().Interface()
	}
	parts := make([]any, len(dests))
	for i, d := range dests {
		parts[i] = reflect.ValueOf(d).Elem().Interface()
	}
	return parts
}

// keyColumns selects the key's columns, in keyDests' order.
func (cc *childCaches) keyColumns() []any {
	cols := cc.key.ColumnsIn(clause.CurrentTable)
	out := make([]any, len(cols))
	for i, c := range cols {
		out[i] = c
	}
	return out
}

// keyOrder is ascending key order, column by column: the order rows are
// locked in, by every locking read that restricts to keys.
func (cc *childCaches) keyOrder() clause.OrderBy { return cc.key.OrderBy(clause.CurrentTable, false) }

// keyID is a key's text for lockKeys' lock rows: fkID's form, and for a
// composite key its parts joined as a composite record_id.
func (cc *childCaches) keyID(k any) (string, bool, error) {
	if cc.key.Parts == nil {
		return fkID(k)
	}
	parts := k.([]any)
	texts := make([]string, len(parts))
	for i, part := range parts {
		var err error
		if texts[i], _, err = fkID(part); err != nil {
			return "", false, err
		}
	}
	id := meta.JoinKeyParts(texts)
	if err := meta.CheckKey("record id", id); err != nil {
		return "", false, err
	}
	return id, true, nil
}

// fkSupported reports whether fkID can turn values of a foreign key's type
// into record ids.
func fkSupported(t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		return nil
	}
	if meta.HasKeyMethod(t) {
		return nil
	}
	return fmt.Errorf("a %s foreign key cannot name a record", t)
}

// fkID returns the parent's record_id a foreign key value names, formatted
// as meta.Key.id formats the parent's key; ok is false for a nil or zero
// key, which counts nowhere.
func fkID(v any) (id string, ok bool, err error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "", false, nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.IsZero() {
		return "", false, nil
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), true, nil
	case reflect.String:
		id = rv.String()
	default:
		if valuer, isValuer := rv.Interface().(driver.Valuer); isValuer {
			dv, err := valuer.Value()
			if err != nil {
				return "", false, fmt.Errorf("%w: %T.Value: %v", errs.ErrUnsupportedKey, v, err)
			}
			switch dv := dv.(type) {
			case nil:
				return "", false, nil
			case int64:
				if dv == 0 {
					return "", false, nil
				}
				return strconv.FormatInt(dv, 10), true, nil
			case string:
				id = dv
			case []byte:
				id = hex.EncodeToString(dv)
			default:
				return "", false, fmt.Errorf("%w: %T.Value returned %T", errs.ErrUnsupportedKey, v, dv)
			}
		} else if s, isStringer := rv.Interface().(fmt.Stringer); isStringer {
			id = s.String()
		} else {
			return "", false, fmt.Errorf("%w: %T cannot name a record", errs.ErrUnsupportedKey, v)
		}
	}
	if id == "" {
		return "", false, nil
	}
	if len(id) > errs.MaxKeyLen {
		return "", false, fmt.Errorf("%w: foreign key is %d bytes, longer than %d", errs.ErrUnsupportedKey, len(id), errs.MaxKeyLen)
	}
	return id, true, nil
}

// toInt64 reads a sum column's value; nil and NULL are 0.
func toInt64(v any) (int64, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return 0, nil
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Invalid:
		return 0, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u), nil
		}
		return 0, fmt.Errorf("%w: %d does not fit a counter", errs.ErrInvalidConfig, rv.Uint())
	}
	if valuer, ok := rv.Interface().(driver.Valuer); ok {
		dv, err := valuer.Value()
		if err != nil {
			return 0, err
		}
		switch dv := dv.(type) {
		case nil:
			return 0, nil
		case int64:
			return dv, nil
		}
	}
	return 0, fmt.Errorf("%w: %T is not an integer", errs.ErrInvalidConfig, v)
}
