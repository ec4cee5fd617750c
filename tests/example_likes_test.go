package tests

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Likes, one per user: AddOnce to like, RemoveOnce to unlike, the "liked by
// me" flags of a page through auto-fill, and who liked a story.
func Example_likes() {
	db, done := exampleOpen(slotted.Config{})
	defer done()
	_ = db.AutoMigrate(&Story{})

	stories := []Story{{Title: "a"}, {Title: "b"}, {Title: "c"}}
	db.Create(&stories)
	for _, u := range []string{"user:1", "user:2", "user:3"} {
		_, _ = slotted.AddOnce(db, &stories[0], "likes", 1, u)
	}
	_, _ = slotted.AddOnce(db, &stories[2], "likes", 1, "user:1")
	again, _ := slotted.AddOnce(db, &stories[0], "likes", 1, "user:1") // a second like by user 1: not applied
	_, _ = slotted.RemoveOnce(db, &stories[0], "likes", "user:2")      // unlike

	var page []Story
	slotted.WithOnceKey(db, "user:1").Order("id").Find(&page)
	fmt.Println(again, page[0].Likes, page[0].Liked, page[1].Liked, page[2].Liked)
	who, _ := slotted.OnceKeys(db, &stories[0], "likes", "", 10)
	fmt.Println(who)

	one, _ := slotted.Applied(db, &stories[0], "likes", "user:3")
	flags, _ := slotted.AppliedMany(db, &stories, "likes", "user:3")
	held := []Story{{ID: stories[0].ID}, {ID: stories[1].ID}}
	_ = slotted.LoadApplied(db, &held, "user:3")
	fmt.Println(one, flags, held[0].Liked, held[1].Liked)

	kept, _ := slotted.AddOnce(db, &stories[1], "likes", 1, "user:4", slotted.OnceOptions{KeepForever: true})
	err := slotted.Increment(slotted.MustExist(db), &Story{ID: 999}, "likes")
	fmt.Println(kept, errors.Is(err, gorm.ErrRecordNotFound))

	var mine []Story // the stories user 1 liked
	db.Scopes(slotted.WhereApplied(&Story{}, "likes", "user:1")).Order("id").Find(&mine)
	fmt.Println(len(mine), mine[0].Title, mine[1].Title)
	// Output:
	// false 2 true false true
	// [user:1 user:3]
	// true [true false false] true false
	// true true
	// 2 a c
}

// A page of stories with their views of the last 7 days, as a total and day
// by day, beside the all-time total: one statement per field.
func Example_dashboard() {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()
	_ = db.AutoMigrate(&Story{})

	stories := []Story{{Title: "a"}, {Title: "b"}}
	db.Create(&stories)
	for day := 0; day < 10; day++ { // day d: d+1 views of a, 1 of b
		for range day + 1 {
			_ = slotted.Increment(db, &stories[0], "views")
		}
		_ = slotted.Increment(db, &stories[1], "views")
		now = now.AddDate(0, 0, 1)
	}
	now = now.AddDate(0, 0, -1)
	var page []Story
	db.Order("id").Find(&page)
	for _, s := range page {
		var spark []int64
		for _, b := range s.Spark {
			spark = append(spark, b.Count)
		}
		fmt.Println(s.Title, s.Views, s.ViewsWeek, spark)
	}
	series, _ := slotted.SeriesMany(db, &stories, "views", slotted.LastDays(2)) // one statement for both
	held := []Story{{ID: stories[0].ID}}
	_ = slotted.LoadWindows(db, &held, "ViewsWeek")
	fmt.Println(series[0][1].Count, series[1][1].Count, held[0].ViewsWeek, held[0].Views)
	// Output:
	// a 55 49 [4 5 6 7 8 9 10]
	// b 10 7 [1 1 1 1 1 1 1]
	// 10 1 49 0
}
