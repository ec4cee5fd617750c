package slotted_test

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Compiled, not run: likes and dashboards (once_read.go, window.go).
// The runnable versions are in tests/example_likes_test.go.

// Story has one like per user, a "liked by me" flag, and a 7-day view total
// and sparkline filled beside the all-time views.
type Story struct {
	ID        uint
	Likes     int64            `gorm:"-" slotted:"likes"`
	Liked     bool             `gorm:"-" slotted:"likes;applied"`
	Views     int64            `gorm:"-" slotted:"views;buckets:day;tz:Europe/Berlin"`
	ViewsWeek int64            `gorm:"-" slotted:"views;window:7d"`
	Spark     []slotted.Bucket `gorm:"-" slotted:"views;series:7d"`
}

func ExampleApplied() {
	liked, err := slotted.Applied(db, &Story{ID: 42}, "likes", "user:7")
	// SELECT `record_id` FROM `slotted_once` WHERE `record_type` = 'stories.likes' AND `op_key` = 'user:7'
	//   AND `record_id` IN ('42') AND (`expires_at` IS NULL OR `expires_at` > '2026-...')
	fmt.Println(liked, err)
}

func ExampleAppliedMany() {
	var stories []Story
	db.Order("id DESC").Limit(20).Find(&stories)
	liked, _ := slotted.AppliedMany(db, &stories, "likes", "user:7") // one statement for the 20
	for i, s := range stories {
		fmt.Println(s.ID, liked[i])
	}
}

func ExampleWithOnceKey() {
	var stories []Story
	slotted.WithOnceKey(db, "user:7").Order("id DESC").Limit(20).Find(&stories)
	// stories[i].Liked: user 7 liked it; Likes, ViewsWeek, Spark filled too: one statement each
	fmt.Println(stories[0].Liked, stories[0].Likes)
}

func ExampleLoadApplied() {
	stories := []Story{{ID: 1}, {ID: 2}}
	_ = slotted.LoadApplied(db, &stories, "user:7") // stories[i].Liked
}

func ExampleOnceKeys() {
	story := Story{ID: 42}
	after := ""
	for { // who liked story 42, 100 at a time
		keys, err := slotted.OnceKeys(db, &story, "likes", after, 100)
		if err != nil || len(keys) == 0 {
			break
		}
		fmt.Println(keys)
		after = keys[len(keys)-1]
	}
}

func ExampleOnceOptions_keepForever() {
	// With Config{OnceExpireAfter: 24 * time.Hour} (request ids), likes stay until unliked:
	applied, _ := slotted.AddOnce(db, &Story{ID: 42}, "likes", 1, "user:7", slotted.OnceOptions{KeepForever: true})
	retried, _ := slotted.AddOnce(db, &Story{ID: 42}, "views", 1, "req:9f2c", slotted.OnceOptions{ExpireAfter: time.Hour})
	fmt.Println(applied, retried)
}

func ExampleSeriesMany() {
	var stories []Story
	db.Order("id DESC").Limit(20).Find(&stories)
	series, _ := slotted.SeriesMany(db, &stories, "views", slotted.LastDays(7)) // one statement, 20 × 7 buckets
	for i, s := range stories {
		fmt.Println(s.ID, len(series[i]), series[i][6].Count) // today's views
	}
}

func ExampleLoadWindows() {
	stories := []Story{{ID: 1}, {ID: 2}}
	_ = slotted.LoadWindows(db, &stories) // ViewsWeek and Spark: one statement each; Views untouched
	_ = slotted.LoadWindows(db, &stories, "ViewsWeek")
}

func ExampleMustExist() {
	err := slotted.Increment(slotted.MustExist(db), &Story{ID: 999}, "likes")
	// SELECT `id` FROM `stories` WHERE `stories`.`id` = 999 LIMIT 1
	if errors.Is(err, gorm.ErrRecordNotFound) { // or slotted.ErrRecordNotFound
		fmt.Println("404") // nothing was written
	}
}

func ExampleWhereApplied() {
	var mine []Story // the stories user 7 liked, newest first
	db.Scopes(slotted.WhereApplied(&Story{}, "likes", "user:7")).Order("id DESC").Limit(20).Find(&mine)
}
