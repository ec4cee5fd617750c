package slotted_test

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/composite-keys.md and the multi-level section of
// docs/counter-caches.md, compiled (not run): docs/README.md says how they are tied.

func Example_docCompositeKeys1() {
	type Membership struct {
		OrgID  uint   `gorm:"primaryKey;autoIncrement:false"`
		Handle string `gorm:"primaryKey;size:64"`
		Logins int64  `gorm:"-" slotted:"logins"`
	}

	m := Membership{OrgID: 7, Handle: "ann"}
	slotted.Increment(db, &m, "logins")                               // record_id "7,ann"
	ref, _ := slotted.RefOfKey(db, &Membership{}, "logins", 7, "ann") // the same counter, without the record
	_ = ref
}

func Example_docMultiLevel1() {
	type Region struct {
		ID      uint
		Reviews int64 `gorm:"-" slotted:"reviews"`
	}
	type Review struct {
		ID     uint
		UserID *uint `gorm:"index"`
	}
	type User struct {
		ID        uint
		CompanyID *uint `gorm:"index"`
		Reviews   []Review
		DeletedAt gorm.DeletedAt
		Count     int64 `gorm:"-" slotted:"reviews"` // the user's own review count: the first level
	}
	type Company struct {
		ID       uint
		RegionID *uint `gorm:"index"`
		Users    []User
		Reviews  int64 `gorm:"-" slotted:"reviews"`
	}

	slotted.CounterCache(db, &User{}, "Reviews", "reviews")                                                  // declared first
	slotted.CounterCache(db, &Company{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"})    // adds up the users' counter
	slotted.CounterCache(db, &Region{}, "Companies", "reviews", slotted.CacheOptions{SumCounter: "reviews"}) // and a third level, if wanted
}
