package slotted

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/countercache"
)

// Counter caches: a parent's slotted counter kept equal to the number (or a
// column's sum) of its children by the plugin's callbacks, in the same
// transaction as each change of a child (internal/countercache). Declared
// with CounterCache; CacheOptions refine what a child counts for.

// CacheOptions refines a counter cache (CounterCache's last argument): Where
// and Match count only some children, Sum and SumCounter add up a value
// instead of counting. The zero value counts every live child once.
//
//	slotted.CounterCache(db, &Post{}, "Votes", "score", slotted.CacheOptions{Where: "up = ?", WhereArgs: []any{true}, Weight: 2})
type CacheOptions struct {
	// Where counts only the children matching an SQL condition on the child
	// table ("published = ?"), with WhereArgs bound to its placeholders. The
	// database evaluates it: on the rows an update or delete locks before and
	// after the change, in Fix's count, and, unless Match is given too, on the
	// rows a Create inserted (one extra SELECT by primary key per Create
	// statement).
	Where     string
	WhereArgs []any

	// Match is Where's twin in Go, a func(*Child) bool evaluated on the
	// in-memory records of a Create instead of reading them back. It needs
	// Where and must agree with it (a disagreement is drift that Fix
	// repairs). Any other type, or a func of another model, is
	// ErrInvalidConfig at declaration.
	//
	//	slotted.CacheOptions{Where: "published = ?", WhereArgs: []any{true}, Match: func(c *Comment) bool { return c.Published }}
	Match any

	// Sum adds up an integer column of the children (field name or column
	// name) instead of counting them: order totals per customer. NULL counts
	// as 0.
	Sum string

	// Weight counts each child as Weight instead of 1 (counter_culture's
	// delta_magnitude): a review worth 5 points, a weighted vote. With Sum,
	// each child adds Weight times its column. 0, the zero value, means 1;
	// a negative weight counts down.
	Weight int64

	// WithDeleted counts soft-deleted children too (counter_culture's
	// include_soft_deleted-style counters): a soft delete or a restore leaves
	// the count alone, a hard delete (Unscoped) uncounts the row. Fix counts
	// with Unscoped. Soft deletes of such children read their rows again
	// after the UPDATE (one more SELECT).
	WithDeleted bool

	// Touch sets the parent's updated_at (its autoUpdateTime column) whenever
	// the counter changes, in the same transaction: counter_culture's touch:
	// true. Costly on a hot parent: it writes the parent's row in every
	// child's transaction, the single contended row that slotted counters
	// exist to avoid (the child Create then runs at the speed of the
	// Rails-style cache; BENCHMARKS.md). With a foreign key constraint on
	// MySQL/MariaDB, the child's INSERT takes a shared lock on the parent row
	// that the touch then upgrades: concurrent inserters deadlock (retry the
	// transaction).
	Touch bool

	// SumCounter adds up a counter of the child instead of counting the child
	// rows: a multi-level cache. It names the child's counter (tag or field
	// name), which must itself be a counter cache, declared first. Where,
	// Match, Weight, WithDeleted and Touch apply to the intermediate rows;
	// Sum cannot be combined with it.
	SumCounter string
}

// spec turns the public options into the mechanism's declaration
// (internal/countercache.Spec). Match arrives as any, so its type, which the
// compiler checked when Match was a generic func, is checked here; Declare
// then compares it with the child model.
func (o CacheOptions) spec() (countercache.Spec, error) {
	s := countercache.Spec{Sum: o.Sum, Weight: o.Weight, WithDeleted: o.WithDeleted, Touch: o.Touch, SumCounter: o.SumCounter}
	switch {
	case o.Where != "":
		s.Where = &clause.Expr{SQL: o.Where, Vars: o.WhereArgs}
	case len(o.WhereArgs) > 0:
		return s, fmt.Errorf("%w: CacheOptions.WhereArgs without Where", ErrInvalidConfig)
	}
	if o.Match == nil {
		return s, nil
	}
	fn := reflect.ValueOf(o.Match)
	t := fn.Type()
	if t.Kind() != reflect.Func || t.NumIn() != 1 || t.NumOut() != 1 || t.IsVariadic() ||
		t.In(0).Kind() != reflect.Pointer || t.In(0).Elem().Kind() != reflect.Struct || t.Out(0).Kind() != reflect.Bool {
		return s, fmt.Errorf("%w: CacheOptions.Match is a %s, not a func(*Child) bool", ErrInvalidConfig, t)
	}
	if fn.IsNil() {
		return s, fmt.Errorf("%w: CacheOptions.Match is a nil %s", ErrInvalidConfig, t)
	}
	s.MatchType = t.In(0).Elem()
	s.Match = func(v reflect.Value) bool { return fn.Call([]reflect.Value{v.Addr()})[0].Bool() }
	return s, nil
}

// CounterCache declares that a parent's counter is maintained from a child
// table. model and association name a relationship gorm parsed: a has-many
// or has-one of the parent (CounterCache(db, &Post{}, "Comments", "comments"))
// or a belongs-to of the child (CounterCache(db, &Comment{}, "Post",
// "comments")), or a many-to-many of either side (CounterCache(db, &Tag{},
// "Posts", "posts") counts the tag's rows in gorm's join table; see
// docs/counter-caches.md). counter is the parent's slotted counter (tag or field name).
// Call it once per counter after db.Use and before writing children; an
// invalid declaration returns an error wrapping ErrInvalidConfig (or
// ErrUnsupportedModel / ErrUnknownCounter) and registers nothing. Declaring
// a counter that is already a counter cache is refused the same way, even
// with the same arguments (Match holds a function, which cannot be
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
func CounterCache(db *gorm.DB, model any, association, counter string, opts ...CacheOptions) error {
	p, err := pluginOf(db)
	if err != nil {
		return err
	}
	o, err := optionsOf(opts)
	if err != nil {
		return err
	}
	spec, err := o.spec()
	if err != nil {
		return err
	}
	return p.caches.Declare(db, model, association, counter, spec)
}
