package slotted_test

import (
	"fmt"

	"github.com/slotted-go/slotted"
)

// Membership has a composite primary key (docs/composite-keys.md).
type Membership struct {
	OrgID  uint   `gorm:"primaryKey;autoIncrement:false"`
	Handle string `gorm:"primaryKey;size:64"`
	Logins int64  `gorm:"-" slotted:"logins"`
}

func ExampleRefOfKey() {
	ref, err := slotted.RefOfKey(db, &Membership{}, "logins", 7, "a,b")
	fmt.Printf("%+v %v\n", ref, err) // {Type:memberships.logins ID:7,a%2Cb Slots:100} <nil>: the ',' inside a part is escaped
	_ = slotted.AddRef(db, ref, 1)   // as Increment(db, &Membership{OrgID: 7, Handle: "a,b"}, "logins")
}

func ExampleSplitKeyID() {
	top, _ := slotted.TopRefs(db, &Membership{}, "logins", 10)
	for _, t := range top {
		parts, _ := slotted.SplitKeyID(t.Ref.ID) // "7,a%2Cb" -> ["7" "a,b"]
		fmt.Println(parts, t.Total)
	}
}
