package slotted_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/slotted-go/slotted"
)

// Compiled, not run, like example_test.go: bucketed counters, Top and the
// ordering scopes. The runnable versions are in tests/example_test.go.

// Video counts views per day (in New York) and per hour, keeping 90 days.
type Video struct {
	ID         uint
	Title      string
	Views      int64 `gorm:"-" slotted:"views;buckets:day;tz:America/New_York;keep:90"`
	Plays      int64 `gorm:"-" slotted:"plays;buckets:hour;keep:48"`
	Likes      int64 `gorm:"-" slotted:"likes;cache:likes_count"`
	LikesCount int64
}

func ExampleCountBetween() {
	video := Video{ID: 7}
	_ = slotted.Increment(db, &video, "views") // the all-time total and today's bucket, one statement
	// INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`)
	//   VALUES ('videos.views','7',17,1),('videos.views@2026-11-23','7',17,1)
	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 1

	ny, _ := time.LoadLocation("America/New_York")
	today := time.Date(2026, 11, 23, 0, 0, 0, 0, ny)
	week, err := slotted.CountBetween(db, &video, "views", today.AddDate(0, 0, -6), today.AddDate(0, 0, 1))
	// SELECT `record_id`, SUM(`count`) FROM `slotted_counters`
	//   WHERE `record_type` IN ('videos.views@2026-11-17',...,'videos.views@2026-11-23') AND `record_id` = '7' GROUP BY `record_id`
	fmt.Println(week, err)
}

func ExampleSeries() {
	now := time.Now()
	hours, _ := slotted.Series(db, &Video{ID: 7}, "plays", now.Add(-24*time.Hour), now)
	for _, h := range hours { // 25 buckets: the one holding now-24h through the current one; 0 where nothing was written
		fmt.Println(h.Start.Format("15:04"), h.Count)
	}
	// SELECT `record_type`, SUM(`count`) FROM `slotted_counters`
	//   WHERE `record_type` IN ('videos.plays@2026-11-22T14',...) AND `record_id` = '7' GROUP BY `record_type`
}

func ExampleLoadBetween() {
	var videos []Video
	db.Order("id").Limit(20).Find(&videos) // all-time totals
	now := time.Now()
	_ = slotted.LoadBetween(db, &videos, now.AddDate(0, 0, -7), now, "views") // Views: the last 7 days and today
	// SELECT `record_id`, SUM(`count`) FROM `slotted_counters`
	//   WHERE `record_type` IN ('videos.views@2026-11-16',...) AND `record_id` IN ('1','2',...) GROUP BY `record_id`
}

func ExampleMaintainBuckets() {
	prog, err := slotted.MaintainBuckets(db, &Video{})
	// the last 2 closed days (and hours) compacted to a row per video; days older than 90 and hours older than 48 deleted
	fmt.Println(prog.Compacted, prog.Expired, err)

	// or every minute, with the rest of the lifecycle:
	r := slotted.Runner{Buckets: &slotted.BucketOptions{Models: []any{&Video{}}}}
	go func() { _ = r.Run(context.Background(), db) }()
}

func ExampleTop() {
	top, err := slotted.Top(db, &Video{}, "likes", 10) // []Video, counters filled
	// likes has a cache column: SELECT * FROM `videos` ORDER BY `videos`.`likes_count` DESC,`videos`.`id` DESC LIMIT 10
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range top {
		fmt.Println(v.Title, v.Likes)
	}
	mine, _ := slotted.Top(db.Where("title LIKE ?", "cats%"), &Video{}, "views", 3) // all-time views, among cat videos
	_ = mine
}

func ExampleTopBetween() {
	now := time.Now()
	trending, _ := slotted.TopBetween(db, &Video{}, "views", 10, now.AddDate(0, 0, -6), now)
	// SELECT `videos`.`id`,... FROM `videos` LEFT JOIN (SELECT SQL_BIG_RESULT `record_id` AS slotted_id, SUM(`count`) AS slotted_total
	//   FROM `slotted_counters` WHERE `record_type` IN ('videos.views@2026-11-17',...) GROUP BY `record_id`) `slotted_views_window`
	//   ON `slotted_views_window`.slotted_id = CAST(`videos`.`id` AS CHAR)
	//   ORDER BY COALESCE(`slotted_views_window`.`slotted_total`, 0) DESC,`videos`.`id` DESC LIMIT 10
	for _, v := range trending {
		fmt.Println(v.Title, v.Views) // this week's views
	}
}

func ExampleTopRefs() {
	refs, _ := slotted.TopRefs(db, &Video{}, "views", 10)
	// SELECT `record_id` AS slotted_id, SUM(`count`) AS slotted_total FROM `slotted_counters`
	//   WHERE `record_type` = 'videos.views' GROUP BY `record_id` ORDER BY `slotted_total` DESC,`slotted_id` DESC LIMIT 10
	for _, r := range refs {
		fmt.Println(r.Ref.ID, r.Total)
	}
}

func ExampleTopRefsBetween() {
	now := time.Now()
	refs, _ := slotted.TopRefsBetween(db, &Video{}, "plays", 5, now.Add(-time.Hour), now) // the last hour or two
	for _, r := range refs {
		fmt.Println(r.Ref.ID, r.Total)
	}
}

func ExampleOrderBy() {
	var page []Video
	err := db.Scopes(slotted.OrderBy(&Video{}, "views", "DESC")).Order("id").
		Where("title LIKE ?", "cats%").Limit(20).Offset(40).Find(&page).Error
	// SELECT `videos`.`id`,... FROM `videos` LEFT JOIN (SELECT `record_id` AS slotted_id, SUM(`count`) AS slotted_total
	//   FROM `slotted_counters` WHERE `record_type` = 'videos.views' GROUP BY `record_id`) `slotted_views`
	//   ON `slotted_views`.slotted_id = CAST(`videos`.`id` AS CHAR)
	//   WHERE title LIKE 'cats%' ORDER BY COALESCE(`slotted_views`.`slotted_total`, 0) DESC,id LIMIT 20 OFFSET 40
	fmt.Println(len(page), err)
}

func ExampleOrderByBetween() {
	now := time.Now()
	var week []Video
	db.Scopes(slotted.OrderByBetween(&Video{}, "views", "DESC", now.AddDate(0, 0, -6), now)).Order("id").Limit(10).Find(&week)
}

func ExampleWhereCounter() {
	var popular []Video
	var n int64
	q := db.Model(&Video{}).Scopes(slotted.WhereCounter(&Video{}, "views", ">=", 1000))
	q.Count(&n)                                                                   // SELECT count(*) FROM `videos` LEFT JOIN (...) `slotted_views` ON ... WHERE COALESCE(`slotted_views`.`slotted_total`, 0) >= 1000
	q.Scopes(slotted.OrderBy(&Video{}, "views", "DESC")).Limit(10).Find(&popular) // one join for both

	err := db.Scopes(slotted.WhereCounter(&Video{}, "views", "; DROP TABLE videos", 0)).Find(&popular).Error
	fmt.Println(err) // slotted: invalid argument: comparison ...: nothing was sent
}
