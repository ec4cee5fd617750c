package slotted

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/meta"
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

// CacheOption refines a counter cache: Where and Match count only some
// children, Sum adds up a column instead of counting.
type CacheOption func(*XSpec)

type XSpec struct {
	Where       *clause.Expr
	Match       func(reflect.Value) bool
	MatchType   reflect.Type
	Sum         string
	Weight      int64
	WeightSet   bool
	WithDeleted bool
	Touch       bool
	SumCounter  string // SumCounter: a counter of the child (countercache_multilevel.go)
}

// Where counts only the children matching an SQL condition on the child
// table, e.g. slotted.Where("published = ?", true). The database evaluates
// it: on the rows an update or delete locks before and after the change, in
// Fix's count, and, unless Match is given too, on the rows a Create inserted
// (one extra SELECT by primary key per Create statement).
func Where(query string, args ...any) CacheOption {
	return func(s *XSpec) { s.Where = &clause.Expr{SQL: query, Vars: args} }
}

// Match is Where's twin in Go, evaluated on the in-memory records of a
// Create instead of reading them back. It must agree with Where (a
// disagreement is drift that Fix repairs); T is the child model.
//
//	slotted.Where("published = ?", true), slotted.Match(func(c *Comment) bool { return c.Published })
func Match[T any](pred func(*T) bool) CacheOption {
	return func(s *XSpec) {
		s.MatchType = reflect.TypeFor[T]()
		s.Match = func(v reflect.Value) bool { return pred(v.Addr().Interface().(*T)) }
	}
}

// Sum adds up an integer column of the children (field name or column name)
// instead of counting them: order totals per customer. NULL counts as 0.
func Sum(field string) CacheOption {
	return func(s *XSpec) { s.Sum = field }
}

// Weight counts each child as n instead of 1 (counter_culture's
// delta_magnitude): a review worth 5 points, a weighted vote. With Sum, each
// child adds n times its column. n must not be 0.
//
//	slotted.CounterCache(db, &Post{}, "Votes", "score", slotted.Where("up = ?", true), slotted.Weight(2))
func Weight(n int64) CacheOption {
	return func(s *XSpec) { s.Weight, s.WeightSet = n, true }
}

// WithDeleted counts soft-deleted children too (counter_culture's
// include_soft_deleted-style counters): a soft delete or a restore leaves the
// count alone, a hard delete (Unscoped) uncounts the row. Fix counts with
// Unscoped. Soft deletes of such children read their rows again after the
// UPDATE (one more SELECT).
func WithDeleted() CacheOption {
	return func(s *XSpec) { s.WithDeleted = true }
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
}

// childCaches is everything the callbacks need about one child model: its
// counter caches and the columns an image of one of its rows reads.
type childCaches struct {
	schema  *schema.Schema
	key     *schema.Field // single primary key: images are selected and restricted by it
	deleted *schema.Field // soft-delete field (gorm.DeletedAt and the like), or nil
	caches  []*counterCache
	fks     []*schema.Field // distinct foreign key columns
	sums    []*schema.Field // distinct sum columns
	flags   []*clause.Expr  // conditions, one flag column each
	totals  []*meta.Counter // distinct counters of the child that caches add up (SumCounter)
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
}

func (p *Plugin) childCachesOf(typ reflect.Type) *childCaches {
	if c, ok := p.caches.byChild.Load(typ); ok {
		return c.(*childCaches)
	}
	return nil
}

func (p *Plugin) cacheOf(c *meta.Counter) *counterCache {
	if cc, ok := p.caches.byCounter.Load(c); ok {
		return cc.(*counterCache)
	}
	return nil
}

// CounterCache declares that a parent's counter is maintained from a child
// table. model and association name a relationship gorm parsed: a has-many
// or has-one of the parent (CounterCache(db, &Post{}, "Comments", "comments"))
// or a belongs-to of the child (CounterCache(db, &Comment{}, "Post",
// "comments")). counter is the parent's slotted counter (tag or field name).
// Call it once per counter after db.Use and before writing children; an
// invalid declaration returns an error wrapping ErrInvalidConfig (or
// ErrUnsupportedModel / ErrUnknownCounter) and registers nothing. Declaring
// a counter that is already a counter cache is refused the same way, even
// with the same arguments (options hold functions, which cannot be
// compared): the first declaration stays in force.
//
// From then on, in the same transaction as each change (gorm's default
// transaction or yours), counting live (not soft-deleted) children whose
// foreign key is set:
//
//	db.Create(&comments)        // INSERT ...; one upsert per distinct post, in key order:
//	                            // INSERT INTO slotted_counters ... VALUES ('posts.comments','42',17,3) ON DUPLICATE KEY UPDATE count = count + 3
//	db.Delete(&Comment{ID: 7})  // SELECT id, post_id, deleted_at FROM comments WHERE id = 7 FOR UPDATE; DELETE ... WHERE id = 7; upsert -1
//	db.Model(&c).Update("post_id", 9)  // the same SELECT before and after the UPDATE; -1 on the old post, +1 on the new
//
// What is not tracked (Fix repairs it): raw SQL (db.Exec), statements
// through db.Table() on another table or without the model, and changes made
// by other programs.
func CounterCache(db *gorm.DB, model any, association, counter string, opts ...CacheOption) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	var spec XSpec
	for _, o := range opts {
		if o != nil {
			o(&spec)
		}
	}
	typ := meta.StructType(reflect.TypeOf(model))
	if model == nil || typ == nil {
		return fmt.Errorf("%w: %T is not a struct", ErrUnsupportedModel, model)
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(reflect.New(typ).Interface()); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnsupportedModel, typ, err)
	}
	rel, ok := stmt.Schema.Relationships.Relations[association]
	if !ok {
		return fmt.Errorf("%w: %s has no association %q", ErrInvalidConfig, typ, association)
	}
	var parentSchema, childSchema *schema.Schema
	switch rel.Type {
	case schema.HasMany, schema.HasOne:
		parentSchema, childSchema = rel.Schema, rel.FieldSchema
	case schema.BelongsTo:
		parentSchema, childSchema = rel.FieldSchema, rel.Schema
	default:
		return fmt.Errorf("%w: %s.%s is a %s relationship; counter caches need has-many, has-one or belongs-to", ErrInvalidConfig, typ, association, rel.Type)
	}
	var ref *schema.Reference
	if rel.Polymorphic != nil {
		for _, r := range rel.References {
			if r.ForeignKey == rel.Polymorphic.PolymorphicID {
				ref = r
			}
		}
	} else if len(rel.References) == 1 {
		ref = rel.References[0]
	} else if len(rel.References) > 1 {
		ref = rel.References[0] // a composite foreign key: checked against the parent's key below
	}
	if ref == nil {
		return fmt.Errorf("%w: %s.%s: counter caches need a single foreign key", ErrInvalidConfig, typ, association)
	}
	parent, err := p.models.OfSchema(db, parentSchema)
	if err != nil {
		return err
	}
	c, err := parent.Counter(counter)
	if err == nil && c.Bucket != nil {
		err = fmt.Errorf("%w: counter %q is bucketed; a counter cache keeps a plain counter", ErrInvalidConfig, counter)
	}
	if err != nil {
		return err
	}
	var fkParts []*schema.Field
	if parent.Key.Parts != nil {
		if fkParts, err = compositeFKs(rel, parent, typ.String()+"."+association); err != nil {
			return err
		}
	} else if len(rel.References) > 1 && rel.Polymorphic == nil {
		return fmt.Errorf("%w: %s.%s: counter caches need a single foreign key", ErrInvalidConfig, typ, association)
	} else if ref.PrimaryKey == nil || ref.PrimaryKey.DBName != parent.Key.Column {
		return fmt.Errorf("%w: %s.%s: the foreign key must reference %s's primary key", ErrInvalidConfig, typ, association, parent.Type)
	}
	if err := fkSupported(ref.ForeignKey.FieldType); err != nil {
		return fmt.Errorf("%w: %s.%s: %v", ErrInvalidConfig, childSchema.Name, ref.ForeignKey.Name, err)
	}
	if len(childSchema.PrimaryFields) != 1 {
		return fmt.Errorf("%w: %s: counter cache children need a single-column primary key", ErrUnsupportedModel, childSchema.Name)
	}
	cc := &counterCache{parent: parent, counter: c, fk: ref.ForeignKey, fkParts: fkParts, where: spec.Where, match: spec.Match, weight: 1, deleted: spec.WithDeleted}
	if spec.Weight != 0 {
		cc.weight = spec.Weight
	}
	if spec.Touch {
		if cc.touch = touchField(parentSchema); cc.touch == nil {
			return fmt.Errorf("%w: Touch: %s has no autoUpdateTime column (UpdatedAt)", ErrInvalidConfig, parentSchema.Name)
		}
	}
	if spec.WeightSet && spec.Weight == 0 {
		return fmt.Errorf("%w: Weight(0) counts nothing", ErrInvalidConfig)
	}
	if spec.Sum != "" {
		f := childSchema.LookUpField(spec.Sum)
		if f == nil || f.DBName == "" {
			return fmt.Errorf("%w: Sum(%q): not a column of %s", ErrInvalidConfig, spec.Sum, childSchema.Name)
		}
		if _, err := toInt64(reflect.New(f.FieldType).Elem().Interface()); err != nil {
			return fmt.Errorf("%w: Sum(%q): %s is not an integer column", ErrInvalidConfig, spec.Sum, f.FieldType)
		}
		cc.sum = f
	}
	if spec.SumCounter != "" {
		if err := p.sumCounterOf(db, cc, childSchema, spec); err != nil {
			return err
		}
	}
	if spec.Match != nil {
		if spec.Where == nil {
			return fmt.Errorf("%w: Match needs Where: Fix counts with the SQL condition", ErrInvalidConfig)
		}
		if spec.MatchType != childSchema.ModelType {
			return fmt.Errorf("%w: Match takes *%s, not *%s", ErrInvalidConfig, childSchema.ModelType, spec.MatchType)
		}
	}

	if rel.Polymorphic != nil {
		polymorphic(cc, rel.Polymorphic)
	}

	r := &p.caches
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, dup := r.byCounter.Load(c); dup {
		return fmt.Errorf("%w: counter %q of %s is already a counter cache of %s", ErrInvalidConfig, c.Name, parent.Type, prev.(*counterCache).child.schema.Name)
	}
	var caches []*counterCache
	if prev := p.childCachesOf(childSchema.ModelType); prev != nil {
		caches = prev.caches
	}
	next := newChildCaches(childSchema, append(caches[:len(caches):len(caches)], cc))
	r.byChild.Store(childSchema.ModelType, next)
	for _, c := range next.caches {
		r.byCounter.Store(c.counter, c)
	}
	return nil
}

// newChildCaches lays out the image columns of a child's caches. The caches
// are fresh copies: a registration never changes what a running callback reads.
func newChildCaches(s *schema.Schema, caches []*counterCache) *childCaches {
	cc := &childCaches{schema: s, key: s.PrimaryFields[0], watched: map[string]bool{}}
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
				return "", false, fmt.Errorf("%w: %T.Value: %v", ErrUnsupportedKey, v, err)
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
				return "", false, fmt.Errorf("%w: %T.Value returned %T", ErrUnsupportedKey, v, dv)
			}
		} else if s, isStringer := rv.Interface().(fmt.Stringer); isStringer {
			id = s.String()
		} else {
			return "", false, fmt.Errorf("%w: %T cannot name a record", ErrUnsupportedKey, v)
		}
	}
	if id == "" {
		return "", false, nil
	}
	if len(id) > MaxKeyLen {
		return "", false, fmt.Errorf("%w: foreign key is %d bytes, longer than %d", ErrUnsupportedKey, len(id), MaxKeyLen)
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
		return 0, fmt.Errorf("%w: %d does not fit a counter", ErrInvalidConfig, rv.Uint())
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
	return 0, fmt.Errorf("%w: %T is not an integer", ErrInvalidConfig, v)
}
