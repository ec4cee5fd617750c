package slotted_test

import (
	"errors"
	"fmt"

	"github.com/slotted-go/slotted"
)

// Compiled, not run: windows stated in buckets (window.go). The
// runnable versions are in tests/example_window_spec_test.go.

func ExampleCountIn() {
	video := Video{ID: 7} // views;buckets:day;tz:America/New_York;keep:90
	week, err := slotted.CountIn(db, &video, "views", slotted.LastDays(7))
	// 7 day buckets of New York, today's included:
	// SELECT `record_id`, SUM(`count`) FROM `slotted_counters`
	//   WHERE `record_type` IN ('videos.views@2026-11-17',...,'videos.views@2026-11-23') AND `record_id` = '7' GROUP BY `record_id`
	fmt.Println(week, err)
	_, err = slotted.CountIn(db, &video, "views", slotted.LastDays(91))
	fmt.Println(errors.Is(err, slotted.ErrPastRetention)) // true: keep:90
}

func ExampleSeriesIn() {
	days, _ := slotted.SeriesIn(db, &Video{ID: 7}, "views", slotted.ThisWeek())
	for _, d := range days { // Monday .. Sunday in New York; days after today read 0
		fmt.Println(d.Start.Weekday(), d.Count)
	}
}

func ExampleLoadIn() {
	var videos []Video
	db.Order("id").Limit(20).Find(&videos)
	_ = slotted.LoadIn(db, &videos, slotted.Today(), "views") // Views: today's, in one statement
}

func ExampleToday() {
	today, _ := slotted.CountIn(db, &Video{ID: 7}, "views", slotted.Today()) // midnight to midnight in New York
	fmt.Println(today)
}

func ExampleLastDays() {
	week, _ := slotted.CountIn(db, &Video{ID: 7}, "views", slotted.LastDays(7)) // six whole days and today
	fmt.Println(week)
}

func ExampleLastHours() {
	hours, _ := slotted.SeriesIn(db, &Video{ID: 7}, "plays", slotted.LastHours(24)) // 24 hour buckets, the current one last
	fmt.Println(len(hours))
}

func ExampleThisWeek() {
	week, _ := slotted.CountIn(db, &Video{ID: 7}, "views", slotted.ThisWeek()) // since Monday 00:00
	fmt.Println(week)
}

func ExampleThisMonth() {
	month, _ := slotted.CountIn(db, &Video{ID: 7}, "views", slotted.ThisMonth())
	fmt.Println(month)
}

func ExampleLastBuckets() {
	last, _ := slotted.SeriesIn(db, &Video{ID: 7}, "plays", slotted.LastBuckets(3)) // the current hour and the two before
	fmt.Println(len(last))
}

func ExampleParseWindow() {
	w, err := slotted.ParseWindow("7d") // also "today", "week", "month", "24h", "30b"
	fmt.Println(w, err)
}
