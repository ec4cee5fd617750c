package tests

import (
	"errors"
	"fmt"
	"time"

	"github.com/slotted-go/slotted"
)

// Sunday 2026-11-29, 12:00 UTC: the week of Monday the 23rd. One view each
// day of the 20th .. 29th; LastDays(7) is 7 of them, ThisWeek 7, Today 1,
// and recent (keep:3) refuses a window of 4 days.
func Example_windows() {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	page := Page{Title: "Hello"}
	db.Create(&page)
	for day := 0; day < 10; day++ {
		_ = slotted.Increment(db, &page, "views")
		_ = slotted.Increment(db, &page, "recent")
		now = now.AddDate(0, 0, 1)
	}
	now = now.AddDate(0, 0, -1)
	week, _ := slotted.CountIn(db, &page, "views", slotted.LastDays(7))
	iso, _ := slotted.CountIn(db, &page, "views", slotted.ThisWeek())
	today, _ := slotted.CountIn(db, &page, "views", slotted.Today())
	days, _ := slotted.SeriesIn(db, &page, "views", slotted.ThisWeek())
	fmt.Println(week, iso, today, len(days), days[0].Start.Format("Mon 02"))
	_, err := slotted.CountIn(db, &page, "recent", slotted.LastDays(4))
	fmt.Println(errors.Is(err, slotted.ErrPastRetention))

	month, _ := slotted.CountIn(db, &page, "views", slotted.ThisMonth()) // the 20th .. 29th of November
	_ = slotted.Increment(db, &page, "hits")                             // hits: buckets:hour
	hours, _ := slotted.SeriesIn(db, &page, "hits", slotted.LastHours(3))
	last, _ := slotted.CountIn(db, &page, "hits", slotted.LastBuckets(1))
	w, _ := slotted.ParseWindow("7d")
	loaded := []Page{{ID: page.ID}}
	_ = slotted.LoadIn(db, &loaded, w, "views")
	fmt.Println(month, len(hours), hours[2].Count, last, w, loaded[0].Views)
	// Output:
	// 7 7 1 7 Mon 23
	// true
	// 10 3 1 1 7d 7
}
