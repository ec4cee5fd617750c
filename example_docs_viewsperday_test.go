package slotted_test

import (
	"context"
	"time"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/views-per-day.md, compiled (not run): docs/README.md says how they are tied.

func Example_docViewsPerDay1() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		type Post struct {
			ID        uint
			Views     int64            `gorm:"-" slotted:"views;buckets:day;tz:Europe/Berlin;keep:90"` // all-time total
			ViewsWeek int64            `gorm:"-" slotted:"views;window:7d"`                            // the last 7 days
			Spark     []slotted.Bucket `gorm:"-" slotted:"views;series:7d"`                            // the same, day by day
			Weekly    int64            `gorm:"-" slotted:"weekly;buckets:week"`                        // ISO weeks
		}
		_ = Post{}
	}
}

func Example_docViewsPerDay2() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		today, err := slotted.CountIn(db, &post, "views", slotted.Today())
		week, err := slotted.CountIn(db, &post, "views", slotted.LastDays(7))  // 6 whole days and today: 7 buckets
		iso, err := slotted.CountIn(db, &post, "views", slotted.ThisWeek())    // Monday 00:00 to next Monday 00:00
		days, err := slotted.SeriesIn(db, &post, "views", slotted.LastDays(7)) // 7 Buckets, oldest first; days[6] is today
		slotted.LoadIn(db, &posts, slotted.ThisMonth(), "views")               // posts[i].Views: this month's
		_ = today
		_ = err
		_ = week
		_ = iso
		_ = days
	}
}

func Example_docViewsPerDay3() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		var posts []Post
		db.Order("id DESC").Limit(20).Find(&posts) // Views, ViewsWeek and Spark of 20 posts
		slotted.LoadWindows(db, &posts)            // the same for records read otherwise; LoadWindows(db, &posts, "Spark") for one field
	}
}

func Example_docViewsPerDay4() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		series, err := slotted.SeriesMany(db, &posts, "views", slotted.LastDays(7)) // series[i]: posts[i]'s 7 days, one statement
		_ = series
		_ = err
	}
}

func Example_docViewsPerDay5() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		type Post struct {
			ID    uint
			Views int64 `gorm:"-" slotted:"views;buckets:day"`                             // days of Config.Location (UTC by default)
			Plays int64 `gorm:"-" slotted:"plays;buckets:hour;keep:48"`                    // hours; MaintainBuckets keeps the last 48
			Reads int64 `gorm:"-" slotted:"reads;buckets:day;tz:America/New_York;keep:90"` // New York's days, 90 of them
		}

		slotted.Increment(db, &post, "views") // the total and today's bucket, one statement
		_ = Post{}
	}
}

func Example_docViewsPerDay6() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		today := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		n, err := slotted.CountBetween(db, &post, "views", today, today.AddDate(0, 0, 1))                  // today
		n, err = slotted.CountBetween(db, &post, "views", today.AddDate(0, 0, -6), today.AddDate(0, 0, 1)) // the last 7 days
		days, err := slotted.Series(db, &post, "views", today.AddDate(0, 0, -6), today.AddDate(0, 0, 1))   // 7 × {Start, End, Count}, zeros filled
		slotted.LoadBetween(db, &posts, today.AddDate(0, 0, -6), today.AddDate(0, 0, 1), "views")          // posts[i].Views: the week's views
		_ = n
		_ = err
		_ = days
	}
}

func Example_docViewsPerDay7() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		r := slotted.Runner{Buckets: &slotted.BucketOptions{Models: []any{&Post{}}}} // with Compact, RollUp as before
		go r.Run(ctx, db)
		prog, err := slotted.MaintainBuckets(db, &Post{}) // or once, from a cron
		_ = prog
		_ = err
	}
}
