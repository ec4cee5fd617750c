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
	// Output:
	// 7 7 1 7 Mon 23
	// true
}
