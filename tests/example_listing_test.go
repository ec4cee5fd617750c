package tests

import (
	"fmt"
	"time"

	"github.com/slotted-go/slotted"
)

func Example_list() {
	db, done := exampleClock(&time.Time{})
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}, {Title: "d"}}
	db.Create(&pages)
	for i, n := range []int64{5, 9, 2, 5} {
		_ = slotted.Add(db, &pages[i], "likes", n)
	}
	// Page has no cache column for likes: the listing sums the live slot rows (ReadExact).
	first, _ := slotted.List(db, &Page{}, "likes", slotted.ListOptions{Limit: 2})
	next, _ := slotted.List(db, &Page{}, "likes", slotted.ListOptions{Limit: 2, After: first.Next})
	for _, page := range []*slotted.Page[Page]{first, next} {
		for i, p := range page.Items {
			fmt.Println(p.Title, page.Totals[i])
		}
	}
	fmt.Println(first.Read, next.Next == "")
	// Output:
	// b 9
	// d 5
	// a 5
	// c 2
	// exact true
}

func Example_trending() {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	pages := []Page{{Title: "yesterday's hit"}, {Title: "today's"}}
	db.Create(&pages)
	now = now.AddDate(0, 0, -1)
	_ = slotted.Add(db, &pages[0], "views", 100) // yesterday: weighs 100 × 0.5
	now = now.AddDate(0, 0, 1)
	_ = slotted.Add(db, &pages[1], "views", 60) // today: weighs 60 × 1
	hot, _ := slotted.Trending(db, &Page{}, "views", slotted.TrendOptions{Buckets: 7, HalfLife: 1, Limit: 10})
	for i, p := range hot.Items {
		fmt.Println(p.Title, hot.Scores[i], p.Views)
	}
	// Output:
	// today's 60 60
	// yesterday's hit 50 100
}
