package slotted_test

import "github.com/slotted-go/slotted"

// Reviews counted on their company through their reviewer (company ← user ← review).
type Company struct {
	ID      uint
	Users   []User `gorm:"foreignKey:CompanyID"`
	Reviews int64  `gorm:"-" slotted:"reviews"`
}

type User struct {
	ID        uint
	CompanyID *uint    `gorm:"index"`
	Reviews   []Review `gorm:"foreignKey:UserID"`
	Count     int64    `gorm:"-" slotted:"reviews"` // the first level: the user's own review count
}

type Review struct {
	ID     uint
	UserID *uint `gorm:"index"`
}

func ExampleCacheOptions_sumCounter() {
	// The user's counter first, then the company's, adding the users' counters up.
	_ = slotted.CounterCache(db, &User{}, "Reviews", "reviews")
	_ = slotted.CounterCache(db, &Company{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"})
	// A user changing company moves all their reviews' count in one upsert (-N, +N).
	_ = db.Model(&User{ID: 7}).Update("company_id", 2).Error
}
