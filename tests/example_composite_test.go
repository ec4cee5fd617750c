package tests

import (
	"errors"
	"fmt"

	"github.com/slotted-go/slotted"
)

func Example_refOfKey() {
	db, done := exampleDB()
	defer done()
	if err := db.AutoMigrate(&Membership{}); err != nil {
		panic(err)
	}
	m := Membership{OrgID: 7, Handle: "a,b"}
	db.Create(&m)
	_ = slotted.Increment(db, &m, "logins")

	ref, _ := slotted.RefOfKey(db, &Membership{}, "logins", 7, "a,b") // the record's key, without the record
	fmt.Println(ref.ID)
	_ = slotted.AddRef(db, ref, 1)
	n, _ := slotted.Count(db, &m, "logins")
	fmt.Println(n)

	_, err := slotted.RefOfKey(db, &Membership{}, "logins", 7) // one part of two
	fmt.Println(errors.Is(err, slotted.ErrUnsupportedKey))
	// Output:
	// 7,a%2Cb
	// 2
	// true
}

func Example_splitKeyID() {
	parts, err := slotted.SplitKeyID("7,a%2Cb,50%25")
	fmt.Printf("%q %v\n", parts, err)
	_, err = slotted.SplitKeyID("7,%zz") // no key encodes this
	fmt.Println(errors.Is(err, slotted.ErrUnsupportedKey))
	// Output:
	// ["7" "a,b" "50%"] <nil>
	// true
}
