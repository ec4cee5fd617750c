package countercache

import (
	"context"
	"fmt"
	"reflect"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Polymorphic has-many and has-one (gorm's polymorphic:Owner): comments on
// posts and on videos in one table, told apart by owner_type. A cache counts
// the children whose type column holds its parent's polymorphic value: the
// type is one more condition, ANDed with the cache's Where, and checked in Go
// on new records (with the cache's Match, if any), so a Create does not read
// its rows back. Changing a child's owner_type moves it between the parents'
// counts like a foreign key change. Fix counts with the same condition.
//
//	slotted.CounterCache(db, &Post{}, "Comments", "comments")   // WHERE owner_type = 'posts'
//	slotted.CounterCache(db, &Video{}, "Comments", "comments")  // WHERE owner_type = 'videos'
func polymorphic(cc *counterCache, poly *schema.Polymorphic) {
	typeIs := clause.Expr{SQL: "? = ?", Vars: []any{clause.Column{Table: clause.CurrentTable, Name: poly.PolymorphicType.DBName}, poly.Value}}
	isType := func(v reflect.Value) bool {
		got, _ := poly.PolymorphicType.ValueOf(context.Background(), v)
		rv := reflect.ValueOf(got)
		for rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return false
			}
			rv = rv.Elem()
		}
		return rv.IsValid() && fmt.Sprint(rv.Interface()) == poly.Value
	}
	switch {
	case cc.where == nil:
		cc.where, cc.match = &typeIs, isType
	case cc.match != nil:
		where, match := *cc.where, cc.match
		cc.where = &clause.Expr{SQL: "(?) AND (?)", Vars: []any{where, typeIs}}
		cc.match = func(v reflect.Value) bool { return isType(v) && match(v) }
	default: // a Where without Match: the rows are read back, the database evaluates both
		where := *cc.where
		cc.where = &clause.Expr{SQL: "(?) AND (?)", Vars: []any{where, typeIs}}
	}
}
