package slotted_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// These examples document the API beside each function; they are compiled,
// not run (no database here). The runnable ones, checked against their
// output on SQLite, are in the tests module (tests/example_test.go). The SQL
// in the comments is MySQL's, with values inlined as gorm's logger shows them
// (they are bound parameters).

var db *gorm.DB // opened with your driver: gorm.Open(mysql.Open(dsn), &gorm.Config{})

type Post struct {
	ID         uint
	Title      string
	Likes      int64 `gorm:"-" slotted:"likes;cache:likes_count"` // a counter, not a column
	Views      int64 `gorm:"-" slotted:"views;slots:16"`          // 16 slot rows instead of Config.Slots
	LikesCount int64 // RollUp's cache column: sortable by plain SQL
}

func ExampleNew() {
	if err := db.Use(slotted.New(slotted.Config{})); err != nil { // creates slotted_counters
		log.Fatal(err)
	}
}

func ExampleConfig() {
	err := db.Use(slotted.New(slotted.Config{
		Slots:              64,                    // slot rows per counter (default 100)
		Table:              "stats.counters",      // default "slotted_counters"
		DisableAutoMigrate: true,                  // run slotted.Migrate from your migrations instead
		DisableAutoFill:    true,                  // fill only with slotted.WithFill or slotted.Load
		MaxRetries:         3,                     // autocommit writes retried on deadlocks (default 5; -1: never)
		MinRetryBackoff:    time.Millisecond,      // default 2ms
		MaxRetryBackoff:    50 * time.Millisecond, // default max(100ms, MinRetryBackoff)
	}))
	if errors.Is(err, slotted.ErrInvalidConfig) {
		log.Fatal(err)
	}
}

func ExamplePlugin_Config() {
	p := slotted.New(slotted.Config{})
	_ = db.Use(p)
	fmt.Println(p.Config().Slots, p.Config().Table) // defaults applied: 100 slotted_counters
}

func ExampleIncrement() {
	post := Post{ID: 42}
	if err := slotted.Increment(db, &post, "likes"); err != nil {
		log.Print(err)
	}
	// INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES ('posts.likes','42',17,1)
	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 1
	// post.Likes is 1 higher too.
}

// A handler that loads a post only to count a like: without WithoutFill,
// First would also sum every counter of the post.
func ExampleIncrement_handler() {
	http.HandleFunc("POST /posts/{id}/like", func(w http.ResponseWriter, r *http.Request) {
		var post Post
		if err := slotted.WithoutFill(db).First(&post, r.PathValue("id")).Error; err != nil {
			http.Error(w, "no such post", http.StatusNotFound)
			return
		}
		// SELECT * FROM `posts` WHERE `posts`.`id` = '42' ORDER BY `posts`.`id` LIMIT 1   -- and nothing else
		if err := slotted.Increment(db.WithContext(r.Context()), &post, "likes"); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
}

func ExampleDecrement() {
	post := Post{ID: 42}
	_ = slotted.Decrement(db, &post, "Likes") // the tag name or the Go field name
	// INSERT INTO `slotted_counters` (...) VALUES ('posts.likes','42',3,-1)
	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + -1
}

func ExampleAdd() {
	post := Post{ID: 42}
	_ = slotted.Add(db, &post, "views", 10) // a slot in [0, 16): the tag's slots:16
	// INSERT INTO `slotted_counters` (...) VALUES ('posts.views','42',5,10)
	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 10
	_ = slotted.Add(db, &post, "views", 0) // writes nothing
}

// Inside a transaction the write joins it and rolls back with it.
func ExampleAdd_transaction() {
	post := Post{ID: 42}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&post).Update("title", "edited").Error; err != nil {
			return err
		}
		return slotted.Add(tx, &post, "likes", 1) // not retried here: a deadlock aborted tx, so retry the whole transaction
	})
	if slotted.ConflictOf(err) != slotted.NoConflict {
		log.Print("retry the transaction: ", err)
	}
}

func ExampleRef() {
	ref := slotted.Ref{Type: "123", ID: "456"} // the pattern's record_type = 123, record_id = 456, no model
	_ = slotted.AddRef(db, ref, 1)
	n, _ := slotted.CountRef(db, ref)
	fmt.Println(n)
}

func ExampleAddRef() {
	_ = slotted.AddRef(db, slotted.Ref{Type: "downloads", ID: "v1.2.0"}, 1) // Config.Slots slots
	// INSERT INTO `slotted_counters` (...) VALUES ('downloads','v1.2.0',88,1)
	//   ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + 1
}

func ExampleAddOnce() {
	// A request retried after an ambiguous error ("invalid connection", a deadline) counts once.
	requestID := "9b2f61c4" // from the client, the same on every retry
	applied, err := slotted.AddOnce(db, &Post{ID: 42}, "views", 1, requestID, slotted.OnceOptions{ExpireAfter: 24 * time.Hour})
	// BEGIN
	// INSERT IGNORE INTO `slotted_once` (`record_type`,`record_id`,`op_key`,`delta`,`expires_at`)
	//   VALUES ('posts.views','42','9b2f61c4',1,'2026-11-25 10:00:00')
	// INSERT INTO `slotted_counters` (...) VALUES ('posts.views','42',7,1) ON DUPLICATE KEY UPDATE ...  -- only if applied
	// COMMIT
	fmt.Println(applied, err) // true <nil>; false <nil> on a retry that finds the key

	// One like per user, with no likes table: the user's id is the key, kept forever.
	liked, _ := slotted.AddOnce(db, &Post{ID: 42}, "likes", 1, "user:7")
	fmt.Println(liked) // false when user 7 liked post 42 already
}

func ExampleAddRefOnce() {
	applied, _ := slotted.AddRefOnce(db, slotted.Ref{Type: "downloads", ID: "v1.2.0"}, 1, "req-5f1c")
	fmt.Println(applied)
}

func ExampleRemoveOnce() {
	// Unlike: subtracts what AddOnce added under the key, and frees the key.
	removed, _ := slotted.RemoveOnce(db, &Post{ID: 42}, "likes", "user:7")
	// BEGIN
	// SELECT `delta` FROM `slotted_once` WHERE (`record_type` = 'posts.likes' AND `record_id` = '42' AND `op_key` = 'user:7')
	//   AND (`expires_at` IS NULL OR `expires_at` > '2026-11-24 10:00:00') LIMIT 1 FOR UPDATE
	// DELETE FROM `slotted_once` WHERE (`record_type` = 'posts.likes' AND `record_id` = '42' AND `op_key` = 'user:7')
	// INSERT INTO `slotted_counters` (...) VALUES ('posts.likes','42',31,-1) ON DUPLICATE KEY UPDATE ...
	// COMMIT
	fmt.Println(removed) // false when user 7 had not liked it
}

func ExampleRemoveRefOnce() {
	removed, _ := slotted.RemoveRefOnce(db, slotted.Ref{Type: "downloads", ID: "v1.2.0"}, "req-5f1c")
	fmt.Println(removed)
}

func ExampleOnceOptions() {
	// Remember the key for a day: long enough for every retry of the request. The Runner's
	// PruneKeys deletes it afterwards.
	_, _ = slotted.AddOnce(db, &Post{ID: 42}, "views", 1, "9b2f61c4", slotted.OnceOptions{ExpireAfter: 24 * time.Hour})
	go slotted.Runner{PruneKeys: true}.Run(context.Background(), db)
}

func ExampleRefOf() {
	ref, _ := slotted.RefOf(db, &Post{ID: 42}, "likes")
	fmt.Printf("%+v\n", ref) // {Type:posts.likes ID:42 Slots:100}: AddRef(db, ref, 1) writes as Add does
}

func ExampleCount() {
	n, err := slotted.Count(db, &Post{ID: 42}, "likes")
	// SELECT COALESCE(SUM(`count`), 0) FROM `slotted_counters` WHERE `record_type` = 'posts.likes' AND `record_id` = '42'
	fmt.Println(n, err)
}

func ExampleCountRef() {
	n, _ := slotted.CountRef(db, slotted.Ref{Type: "downloads", ID: "v1.2.0"})
	// SELECT COALESCE(SUM(`count`), 0) FROM `slotted_counters` WHERE `record_type` = 'downloads' AND `record_id` = 'v1.2.0'
	fmt.Println(n)
}

func ExampleLoad() {
	var posts []Post
	slotted.WithoutFill(db).Limit(3).Find(&posts)
	_ = slotted.Load(db, &posts, "likes") // no names: every counter of Post
	// SELECT `record_type`, `record_id`, SUM(`count`) FROM `slotted_counters`
	//   WHERE `record_type` IN ('posts.likes') AND `record_id` IN ('1','2','3') GROUP BY `record_type`,`record_id`
}

func ExampleWithoutFill() {
	var posts []Post
	slotted.WithoutFill(db).Find(&posts) // this query only: Likes and Views stay 0, no counter query
	// SELECT * FROM `posts`

	db.Scopes(slotted.WithoutFill).Find(&posts) // the same, as a scope
}

func ExampleWithFill() {
	// With Config.DisableAutoFill, fill one query:
	var posts []Post
	slotted.WithFill(db).Find(&posts)
	// SELECT * FROM `posts`
	// SELECT `record_type`, `record_id`, SUM(`count`) FROM `slotted_counters`
	//   WHERE `record_type` IN ('posts.likes','posts.views') AND `record_id` IN (...) GROUP BY `record_type`,`record_id`
}

func ExampleTable() {
	var rows []slotted.SlottedCounter
	slotted.Table(db).Where("record_type = ? AND record_id = ?", "posts.likes", "42").Order("slot").Find(&rows)
	// SELECT * FROM `slotted_counters` WHERE record_type = 'posts.likes' AND record_id = '42' ORDER BY slot
	for _, r := range rows {
		fmt.Println(r.Slot, r.Count)
	}
}

func ExampleMigrate() {
	// With Config.DisableAutoMigrate, from your own migration step (idempotent):
	if err := slotted.Migrate(db); err != nil {
		log.Fatal(err)
	}
	// CREATE TABLE `slotted_counters` (`record_type` varbinary(128) NOT NULL, `record_id` varbinary(128) NOT NULL,
	//   `slot` int NOT NULL, `count` bigint NOT NULL, PRIMARY KEY (`record_type`,`record_id`,`slot`))
}

func ExampleCompact() {
	_ = slotted.Compact(db, &Post{ID: 42}, "likes")
	// BEGIN
	// SELECT `record_type`,`record_id`,`slot`,`count` FROM `slotted_counters`
	//   WHERE (`record_type` = 'posts.likes' AND `record_id` IN ('42')) ORDER BY `record_type`,`record_id`,`slot` FOR UPDATE
	// DELETE FROM `slotted_counters` WHERE (`record_type` = 'posts.likes' AND `record_id` = '42' AND `slot` IN (3,8,17))
	// INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES ('posts.likes','42',3,<their sum>)
	// COMMIT
}

func ExampleCompactRef() {
	_ = slotted.CompactRef(db, slotted.Ref{Type: "downloads", ID: "v1.2.0"}) // the same, for a counter without a model
}

func ExampleCompactAll() {
	var last slotted.Ref // from the previous, interrupted run
	prog, err := slotted.CompactAll(db.WithContext(context.Background()), slotted.CompactOptions{
		RecordType: "posts.likes", // optional: one kind of counter
		MinRows:    10,            // only counters with more than 10 slot rows
		After:      last,          // resume
		Progress:   func(p slotted.CompactProgress) { log.Printf("%d counters, %d rows removed", p.Counters, p.RowsRemoved) },
	})
	// SELECT `record_type`, `record_id` FROM `slotted_counters` WHERE `record_type` = 'posts.likes'
	//   GROUP BY `record_type`,`record_id` HAVING COUNT(*) > 10 ORDER BY `record_type`,`record_id` LIMIT 100
	// then one Compact-style transaction per page of 100 counters
	fmt.Println(prog.Last, err) // prog.Last: After for resuming
}

func ExampleReset() {
	var recount int64
	db.Table("likes").Where("post_id = ?", 42).Count(&recount)
	post := Post{ID: 42}
	_ = slotted.Reset(db, &post, "likes", recount) // post.Likes = recount too
	// as Compact, but the locked rows are replaced by one row holding recount (none for 0)
}

func ExampleResetRef() {
	_ = slotted.ResetRef(db, slotted.Ref{Type: "downloads", ID: "v1.2.0"}, 0) // removes the counter's rows
}

func ExampleRollUp() {
	var posts []Post
	slotted.WithoutFill(db).Limit(2).Find(&posts)
	_ = slotted.RollUp(db, &posts)
	// SELECT `record_type`, `record_id`, SUM(`count`) FROM `slotted_counters` WHERE ... GROUP BY ...
	// UPDATE `posts` SET `likes_count`=17 WHERE `id` = 1
	// UPDATE `posts` SET `likes_count`=3 WHERE `id` = 2
	var top []Post
	db.Order("likes_count DESC").Limit(10).Find(&top) // plain SQL sorts by the cached column
}

func ExampleRollUpAll() {
	prog, err := slotted.RollUpAll(db, &Post{}, slotted.RollUpOptions{BatchSize: 500})
	// SELECT `id` FROM `posts` ORDER BY `id` LIMIT 500, then WHERE `id` > <last> ... per page, and RollUp on each page
	fmt.Println(prog.Records, err)
}

func ExampleRunner() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r := slotted.Runner{
		Interval: time.Minute,
		Compact:  &slotted.CompactOptions{MinRows: 10}, // CompactAll every pass
		RollUp:   []any{&Post{}},                       // RollUpAll(&Post{}) every pass
		OnError:  func(err error) { log.Print(err) },
		OnPass:   func(p slotted.Pass) { log.Printf("compacted %d counters in %v", p.Compact.Counters, p.Took) },
	}
	go func() { _ = r.Run(ctx, db) }() // until ctx ends
}

func ExampleRunner_Run() {
	// One pass, then stop: e.g. a cron job's whole work.
	ctx, stop := context.WithCancel(context.Background())
	r := slotted.Runner{Compact: &slotted.CompactOptions{}, OnPass: func(slotted.Pass) { stop() }}
	if err := r.Run(ctx, db); err != nil {
		log.Fatal(err) // no plugin, or nothing to do
	}
}

func ExampleSweep() {
	db.Exec("DELETE FROM posts WHERE id = 42") // behind gorm's back: its counters stay
	prog, _ := slotted.Sweep(db, &Post{}, slotted.SweepOptions{BatchSize: 500})
	// SELECT DISTINCT `record_id` FROM `slotted_counters` WHERE `record_type` IN ('posts.likes','posts.views')
	//   ORDER BY `record_id` LIMIT 500
	// SELECT `id` FROM `posts` WHERE `id` IN (...)
	// DELETE FROM `slotted_counters` WHERE `record_type` IN ('posts.likes','posts.views') AND `record_id` IN ('42')
	fmt.Println(prog.Orphans, prog.Rows)
}

func ExampleConflictOf() {
	err := db.Transaction(func(tx *gorm.DB) error { return slotted.Increment(tx, &Post{ID: 42}, "likes") })
	if c := slotted.ConflictOf(err); c != slotted.NoConflict { // Deadlock, LockTimeout, SerializationFailure or Busy
		log.Printf("%v: transient, run the transaction again", c)
	}
}

func ExampleStatsOf() {
	s, err := slotted.StatsOf(db)
	if err != nil {
		log.Fatal(err) // ErrNotRegistered
	}
	fmt.Println(s.Retries, s.Conflicts[slotted.Deadlock])
}

func ExamplePlugin_Stats() {
	p := slotted.New(slotted.Config{})
	_ = db.Use(p)
	for kind, n := range p.Stats().Conflicts {
		log.Printf("%v: %d", kind, n) // e.g. "deadlock: 3"
	}
}

// Hard-deleting a record through gorm removes its counters in the same
// transaction; soft deletes keep them.
func ExampleSlottedCounter() {
	db.Delete(&Post{ID: 42})
	// DELETE FROM `posts` WHERE `posts`.`id` = 42
	// DELETE FROM `slotted_counters` WHERE `record_type` IN ('posts.likes','posts.views') AND `record_id` IN ('42')
	var n int64
	db.Model(&slotted.SlottedCounter{}).Where("record_id = ?", "42").Count(&n) // 0
}

// Counter-cache models: a post counts its comments.
type Article struct {
	ID       uint
	Comments []Comment
	// The counter the cache keeps: a normal slotted counter (filled, compacted, rolled up).
	NumComments int64 `gorm:"-" slotted:"comments"`
}

type Comment struct {
	ID        uint
	ArticleID uint
	Published bool
	Words     int64
}

func ExampleCounterCache() {
	// Once, after db.Use: article.NumComments counts the article's comments,
	// kept in the same transaction as every create, delete, restore or move.
	if err := slotted.CounterCache(db, &Article{}, "Comments", "comments"); err != nil {
		log.Fatal(err) // ErrInvalidConfig, ErrUnknownCounter, ...
	}
	db.Create(&Comment{ArticleID: 7})
	// BEGIN
	// INSERT INTO `comments` (`article_id`,`published`,`words`) VALUES (7,false,0)
	// INSERT INTO `slotted_counters` (...) VALUES ('articles.comments','7',<slot>,1) ON DUPLICATE KEY UPDATE ...
	// COMMIT
}

func ExampleCacheOptions_where() {
	// Count only published comments; a change that flips Published moves the count.
	_ = slotted.CounterCache(db, &Article{}, "Comments", "comments", slotted.CacheOptions{Where: "published = ?", WhereArgs: []any{true}})
}

func ExampleCacheOptions_match() {
	// Where's Go twin, so a Create is counted from the records in memory without reading them back.
	_ = slotted.CounterCache(db, &Article{}, "Comments", "comments", slotted.CacheOptions{
		Where: "published = ?", WhereArgs: []any{true},
		Match: func(c *Comment) bool { return c.Published },
	})
}

func ExampleCacheOptions_sum() {
	// Add up a column of the children instead of counting them.
	_ = slotted.CounterCache(db, &Article{}, "Comments", "comments", slotted.CacheOptions{Sum: "Words"})
}

func ExampleCacheOptions_weight() {
	// Each published comment counts 3 (with Sum: 3 times its column).
	_ = slotted.CounterCache(db, &Article{}, "Comments", "comments", slotted.CacheOptions{
		Weight: 3,
		Where:  "published = ?", WhereArgs: []any{true},
		Match: func(c *Comment) bool { return c.Published },
	})
}

func ExampleCacheOptions_withDeleted() {
	// Soft-deleted comments count too: a soft delete or restore leaves the count alone.
	_ = slotted.CounterCache(db, &Article{}, "Comments", "comments", slotted.CacheOptions{WithDeleted: true})
}

func ExampleCacheOptions_touch() {
	// Set the article's updated_at whenever its count changes (costly on a hot article:
	// it writes the article's row in every comment's transaction).
	_ = slotted.CounterCache(db, &Article{}, "Comments", "comments", slotted.CacheOptions{Touch: true})
}

func ExampleFix() {
	// Recompute one article's counter caches from its comments; DryRun reports the drift only.
	drift, err := slotted.Fix(db, &Article{ID: 7}, slotted.FixOptions{DryRun: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range drift {
		fmt.Printf("%s %v: stored %d, actual %d\n", d.Counter, d.Record, d.Stored, d.Actual)
	}
}

func ExampleFixAll() {
	// Every article, in resumable keyset batches, exact while comments keep changing.
	prog, err := slotted.FixAll(db, &Article{}, slotted.FixOptions{BatchSize: 500})
	fmt.Println(prog.Batches, err)
}

func ExampleAddEach() {
	// Several counters of one record in one statement (Laravel's incrementEach).
	_ = slotted.AddEach(db, &Post{ID: 42}, map[string]int64{"likes": 1, "views": 3})
	// INSERT INTO `slotted_counters` (...) VALUES ('posts.likes','42',17,1),('posts.views','42',3,3)
	// ON DUPLICATE KEY UPDATE `count`=`slotted_counters`.`count` + VALUES(`count`)
}

func ExampleAddMany() {
	// One counter of many records, one statement per up to 1024 of them.
	posts := []Post{{ID: 1}, {ID: 2}, {ID: 3}}
	_ = slotted.AddMany(db, &posts, "views", 1)
}

func ExampleAddRefs() {
	_ = slotted.AddRefs(db, map[slotted.Ref]int64{
		{Type: "downloads", ID: "v1.2.0"}: 1,
		{Type: "downloads", ID: "v1.3.0"}: 5,
	})
}

func ExampleAddWhere() {
	// Every post of author 7 gets one view, in one INSERT … SELECT.
	_ = slotted.AddWhere(db.Model(&Post{}).Where("author_id = ?", 7), "views", 1)
}

func ExampleNewBuffer() {
	// Write-behind for counters where speed beats durability: Add returns at
	// once, deltas are summed in memory and flushed every second.
	buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close(context.Background()) // flushes what is pending
	_ = buf.Add(&Post{ID: 42}, "views", 1)
}

func ExamplePruneMarkers() {
	// Daily, from a cron job, when no Runner runs:
	// SELECT `record_id` FROM `slotted_counters` WHERE `record_type` = 'slotted:outcome'
	// DELETE FROM `slotted_counters` WHERE `record_type` = 'slotted:outcome' AND `record_id` IN ('t0195f3a2b4c1...')
	n, err := slotted.PruneMarkers(db)
	fmt.Println(n, err)
}
