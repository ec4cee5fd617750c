package slotted

import (
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/countercache"
)

// Counter caches: a parent's slotted counter kept equal to the number (or a
// column's sum) of its children by the plugin's callbacks, in the same
// transaction as each change of a child (internal/countercache). Declared
// with CounterCache; options refine what a child counts for.

// CacheOption refines a counter cache: Where and Match count only some
// children, Sum adds up a column instead of counting.
type CacheOption func(*countercache.Spec)

// Where counts only the children matching an SQL condition on the child
// table, e.g. slotted.Where("published = ?", true). The database evaluates
// it: on the rows an update or delete locks before and after the change, in
// Fix's count, and, unless Match is given too, on the rows a Create inserted
// (one extra SELECT by primary key per Create statement).
func Where(query string, args ...any) CacheOption {
	return func(s *countercache.Spec) { s.Where = &clause.Expr{SQL: query, Vars: args} }
}

// Match is Where's twin in Go, evaluated on the in-memory records of a
// Create instead of reading them back. It must agree with Where (a
// disagreement is drift that Fix repairs); T is the child model.
//
//	slotted.Where("published = ?", true), slotted.Match(func(c *Comment) bool { return c.Published })
func Match[T any](pred func(*T) bool) CacheOption {
	return func(s *countercache.Spec) {
		s.MatchType = reflect.TypeFor[T]()
		s.Match = func(v reflect.Value) bool { return pred(v.Addr().Interface().(*T)) }
	}
}

// Sum adds up an integer column of the children (field name or column name)
// instead of counting them: order totals per customer. NULL counts as 0.
func Sum(field string) CacheOption {
	return func(s *countercache.Spec) { s.Sum = field }
}

// Weight counts each child as n instead of 1 (counter_culture's
// delta_magnitude): a review worth 5 points, a weighted vote. With Sum, each
// child adds n times its column. n must not be 0.
//
//	slotted.CounterCache(db, &Post{}, "Votes", "score", slotted.Where("up = ?", true), slotted.Weight(2))
func Weight(n int64) CacheOption {
	return func(s *countercache.Spec) { s.Weight, s.WeightSet = n, true }
}

// WithDeleted counts soft-deleted children too (counter_culture's
// include_soft_deleted-style counters): a soft delete or a restore leaves the
// count alone, a hard delete (Unscoped) uncounts the row. Fix counts with
// Unscoped. Soft deletes of such children read their rows again after the
// UPDATE (one more SELECT).
func WithDeleted() CacheOption {
	return func(s *countercache.Spec) { s.WithDeleted = true }
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
	var spec countercache.Spec
	for _, o := range opts {
		if o != nil {
			o(&spec)
		}
	}
	return p.caches.Declare(db, model, association, counter, spec)
}

// Touch sets the parent's updated_at (its autoUpdateTime column) whenever the
// counter changes, in the same transaction: counter_culture's touch: true.
// Off by default, and costly on a hot parent: it writes the parent's row in
// every child's transaction, the single contended row that slotted counters
// exist to avoid (the child Create then runs at the speed of the Rails-style
// cache; BENCHMARKS.md). With a foreign key constraint on MySQL/MariaDB, the
// child's INSERT takes a shared lock on the parent row that the touch then
// upgrades: concurrent inserters deadlock (retry the transaction).
func Touch() CacheOption {
	return func(s *countercache.Spec) { s.Touch = true }
}

// SumCounter makes a counter cache add up a counter of the child instead of
// counting the child rows: a multi-level cache. name is the child's counter
// (tag or field name), which must itself be a counter cache, declared first.
// Where, Match, Weight, WithDeleted and Touch apply to the intermediate rows;
// Sum cannot be combined with it.
func SumCounter(name string) CacheOption {
	return func(s *countercache.Spec) { s.SumCounter = name }
}
