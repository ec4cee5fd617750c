package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// exampleDB opens a fresh SQLite file with the plugin registered.
func exampleDB() (*gorm.DB, func()) { return exampleOpen(slotted.Config{}) }

// exampleOpen opens a fresh SQLite file with the plugin registered with cfg,
// and the posts and articles tables.
func exampleOpen(cfg slotted.Config) (*gorm.DB, func()) {
	db, done := exampleRaw()
	if err := db.Use(slotted.New(cfg)); err != nil {
		panic(err)
	}
	if err := db.AutoMigrate(&Post{}, &Article{}); err != nil {
		panic(err)
	}
	return db, done
}

// exampleRaw opens a fresh SQLite file without the plugin.
func exampleRaw() (*gorm.DB, func()) {
	dir, err := os.MkdirTemp("", "slotted-example")
	if err != nil {
		panic(err)
	}
	db, err := gorm.Open(sqliteOpen(sqliteDSN(filepath.Join(dir, "ex.db"), 5000, false)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	return db, func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
		_ = os.RemoveAll(dir)
	}
}

// rowsOf counts the slot rows of one counter.
func rowsOf(db *gorm.DB, ref slotted.Ref) int64 {
	var n int64
	slotted.Table(db).Where("record_type = ? AND record_id = ?", ref.Type, ref.ID).Count(&n)
	return n
}

func Example_increment() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	for i := 0; i < 3; i++ {
		if err := slotted.Increment(db, &post, "likes"); err != nil {
			fmt.Println(err)
		}
	}
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(post.Likes, n)
	// Output: 3 3
}

func Example_load() {
	db, done := exampleDB()
	defer done()

	posts := []Post{{Title: "a"}, {Title: "b"}}
	db.Create(&posts)
	_ = slotted.Add(db, &posts[0], "likes", 5)
	_ = slotted.Add(db, &posts[1], "likes", 7)

	var found []Post
	db.Order("id").Find(&found) // filled automatically: one query for the posts, one for their counters
	fmt.Println(found[0].Likes, found[1].Likes)

	fresh := []Post{{ID: posts[0].ID}, {ID: posts[1].ID}}
	_ = slotted.Load(db, fresh, "likes") // or explicitly
	fmt.Println(fresh[0].Likes, fresh[1].Likes)
	// Output:
	// 5 7
	// 5 7
}

func Example_addRef() {
	db, done := exampleDB()
	defer done()

	// A counter without a model: record_type "123", record_id "456".
	ref := slotted.Ref{Type: "123", ID: "456"}
	_ = slotted.AddRef(db, ref, 2)
	_ = slotted.AddRef(db, ref, 3)
	n, _ := slotted.CountRef(db, ref)
	fmt.Println(n)
	// Output: 5
}

func Example_addOnce() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	// The first call committed, but say the caller saw "invalid connection" and retries.
	first, _ := slotted.AddOnce(db, &post, "likes", 1, "req-1")
	retry, _ := slotted.AddOnce(db, &post, "likes", 1, "req-1")
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(first, retry, n, post.Likes)
	// Output: true false 1 1
}

func Example_addRefOnce() {
	db, done := exampleDB()
	defer done()

	ref := slotted.Ref{Type: "downloads", ID: "v1.2.0"}
	for _, user := range []string{"user:1", "user:2", "user:1"} {
		applied, _ := slotted.AddRefOnce(db, ref, 1, user)
		fmt.Println(user, applied)
	}
	n, _ := slotted.CountRef(db, ref)
	fmt.Println(n)
	// Output:
	// user:1 true
	// user:2 true
	// user:1 false
	// 2
}

func Example_removeOnce() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	_, _ = slotted.AddOnce(db, &post, "likes", 1, "user:7")        // like
	removed, _ := slotted.RemoveOnce(db, &post, "likes", "user:7") // unlike
	again, _ := slotted.RemoveOnce(db, &post, "likes", "user:7")   // a retried unlike
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(removed, again, n)
	// Output: true false 0
}

func Example_removeRefOnce() {
	db, done := exampleDB()
	defer done()

	ref := slotted.Ref{Type: "downloads", ID: "v1.2.0"}
	_, _ = slotted.AddRefOnce(db, ref, 5, "batch-1")
	removed, _ := slotted.RemoveRefOnce(db, ref, "batch-1")
	n, _ := slotted.CountRef(db, ref)
	fmt.Println(removed, n)
	// Output: true 0
}

func Example_expireAfter() {
	db, done := exampleDB()
	defer done()

	ref := slotted.Ref{Type: "views", ID: "1"}
	applied, _ := slotted.AddRefOnce(db, ref, 1, "req-1", slotted.OnceOptions{ExpireAfter: time.Hour})
	retried, _ := slotted.AddRefOnce(db, ref, 1, "req-1", slotted.OnceOptions{ExpireAfter: time.Hour})
	fmt.Println(applied, retried)

	// A Runner with PruneKeys deletes keys whose hour has passed; this one has not.
	ctx, cancel := context.WithCancel(context.Background())
	_ = slotted.Runner{PruneKeys: true, OnPass: func(p slotted.Pass) { fmt.Println("pruned", p.Pruned); cancel() }}.Run(ctx, db)
	// Output:
	// true false
	// pruned 0
}

func Example_refOf() {
	db, done := exampleDB()
	defer done()

	ref, _ := slotted.RefOf(db, &Post{ID: 42}, "likes")
	fmt.Printf("%+v\n", ref)
	// Output: {Type:posts.likes ID:42 Slots:100}
}

func Example_new() {
	db, done := exampleRaw()
	defer done()

	err := db.Use(slotted.New(slotted.Config{})) // validates the config, creates slotted_counters
	fmt.Println(err, db.Migrator().HasTable(slotted.DefaultTable))

	err = db.Use(slotted.New(slotted.Config{})) // one plugin per *gorm.DB
	fmt.Println(err != nil)
	// Output:
	// <nil> true
	// true
}

func Example_config() {
	db, done := exampleRaw()
	defer done()

	err := db.Use(slotted.New(slotted.Config{Slots: -1}))
	fmt.Println(errors.Is(err, slotted.ErrInvalidConfig))

	db2, done2 := exampleRaw()
	defer done2()
	_ = db2.Use(slotted.New(slotted.Config{Slots: 8, Table: "counters", DisableAutoFill: true}))
	fmt.Println(db2.Migrator().HasTable("counters"))
	// Output:
	// true
	// true
}

func Example_pluginConfig() {
	db, done := exampleRaw()
	defer done()

	p := slotted.New(slotted.Config{Slots: 8})
	_ = db.Use(p)
	c := p.Config() // with defaults applied
	fmt.Println(c.Slots, c.Table, c.MaxRetries, c.MinRetryBackoff, c.MaxRetryBackoff)
	// Output: 8 slotted_counters 5 2ms 100ms
}

func Example_decrement() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	_ = slotted.Increment(db, &post, "likes")
	_ = slotted.Increment(db, &post, "likes")
	_ = slotted.Decrement(db, &post, "Likes") // the Go field name works too
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(post.Likes, n)
	// Output: 1 1
}

func Example_add() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	_ = slotted.Add(db, &post, "views", 10)
	_ = slotted.Add(db, &post, "views", -3)
	_ = slotted.Add(db, &post, "views", 0) // writes nothing
	err := slotted.Add(db, &post, "shares", 1)
	n, _ := slotted.Count(db, &post, "views")
	fmt.Println(post.Views, n, errors.Is(err, slotted.ErrUnknownCounter))
	// Output: 7 7 true
}

func Example_ref() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	ref, _ := slotted.RefOf(db, &post, "likes") // the same counter, named without the model
	_ = slotted.AddRef(db, ref, 5)
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(n)
	// Output: 5
}

func Example_count() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	n, _ := slotted.Count(db, &post, "likes") // no rows: 0
	fmt.Println(n)
	_ = slotted.Add(db, &post, "likes", 3)
	n, _ = slotted.Count(db, post, "likes") // a value works for reads
	fmt.Println(n)
	// Output:
	// 0
	// 3
}

func Example_countRef() {
	db, done := exampleDB()
	defer done()

	n, _ := slotted.CountRef(db, slotted.Ref{Type: "downloads", ID: "v1.2.0"})
	_, err := slotted.CountRef(db, slotted.Ref{Type: "downloads"})
	fmt.Println(n, errors.Is(err, slotted.ErrMissingPrimaryKey))
	// Output: 0 true
}

func Example_withoutFill() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	_ = slotted.Add(db, &post, "likes", 2)

	var filled, plain, scoped Post
	db.First(&filled)                             // plus one counter query
	slotted.WithoutFill(db).First(&plain)         // the post only
	db.Scopes(slotted.WithoutFill).First(&scoped) // the same, as a scope
	fmt.Println(filled.Likes, plain.Likes, scoped.Likes)
	// Output: 2 0 0
}

func Example_withFill() {
	db, done := exampleOpen(slotted.Config{DisableAutoFill: true})
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	_ = slotted.Add(db, &post, "likes", 2)

	var plain, filled Post
	db.First(&plain)
	slotted.WithFill(db).First(&filled)
	fmt.Println(plain.Likes, filled.Likes)
	// Output: 0 2
}

func Example_table() {
	db, done := exampleDB()
	defer done()

	_ = slotted.AddRef(db, slotted.Ref{Type: "downloads", ID: "v1"}, 4)
	var rows []slotted.SlottedCounter
	slotted.Table(db).Where("record_type = ?", "downloads").Find(&rows)
	fmt.Println(len(rows), rows[0].RecordID, rows[0].Count)
	// Output: 1 v1 4
}

func Example_migrate() {
	db, done := exampleRaw()
	defer done()

	_ = db.Use(slotted.New(slotted.Config{DisableAutoMigrate: true}))
	fmt.Println(db.Migrator().HasTable(slotted.DefaultTable))
	err := slotted.Migrate(db) // from your own migration step; idempotent
	fmt.Println(err, db.Migrator().HasTable(slotted.DefaultTable))
	// Output:
	// false
	// <nil> true
}

func Example_compact() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	for range 50 {
		_ = slotted.Increment(db, &post, "likes")
	}
	ref, _ := slotted.RefOf(db, &post, "likes")
	before := rowsOf(db, ref)
	_ = slotted.Compact(db, &post, "likes")
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(before > 1, rowsOf(db, ref), n)
	// Output: true 1 50
}

func Example_compactRef() {
	db, done := exampleDB()
	defer done()

	ref := slotted.Ref{Type: "downloads", ID: "v1"}
	for range 50 {
		_ = slotted.AddRef(db, ref, 1)
	}
	_ = slotted.CompactRef(db, ref)
	n, _ := slotted.CountRef(db, ref)
	fmt.Println(rowsOf(db, ref), n)
	// Output: 1 50
}

func Example_compactAll() {
	db, done := exampleDB()
	defer done()

	for _, id := range []string{"a", "b", "c"} {
		for range 30 {
			_ = slotted.AddRef(db, slotted.Ref{Type: "downloads", ID: id}, 1)
		}
	}
	var batches int
	prog, err := slotted.CompactAll(db, slotted.CompactOptions{
		RecordType: "downloads",
		BatchSize:  2,
		Progress:   func(slotted.CompactProgress) { batches++ },
	})
	fmt.Println(err, prog.Counters, prog.Batches, batches, prog.Last)
	var rows int64
	slotted.Table(db).Count(&rows)
	fmt.Println(rows)
	// Output:
	// <nil> 3 2 2 {downloads c 0}
	// 3
}

func Example_reset() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	for range 5 {
		_ = slotted.Increment(db, &post, "likes")
	}
	_ = slotted.Reset(db, &post, "likes", 2) // e.g. a recount from the likes table
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(post.Likes, n)
	// Output: 2 2
}

func Example_resetRef() {
	db, done := exampleDB()
	defer done()

	ref := slotted.Ref{Type: "downloads", ID: "v1"}
	_ = slotted.AddRef(db, ref, 9)
	_ = slotted.ResetRef(db, ref, 0) // 0 leaves no row
	n, _ := slotted.CountRef(db, ref)
	fmt.Println(n, rowsOf(db, ref))
	// Output: 0 0
}

func Example_rollUp() {
	db, done := exampleDB()
	defer done()

	a := Article{Title: "Hello"}
	db.Create(&a)
	_ = slotted.Add(db, &a, "likes", 7)
	_ = slotted.RollUp(db, &a) // every counter with a cache: column
	var stored Article
	slotted.WithoutFill(db).First(&stored) // the column alone, no counter query
	fmt.Println(a.LikesCount, stored.LikesCount)
	// Output: 7 7
}

func Example_rollUpAll() {
	db, done := exampleDB()
	defer done()

	articles := []Article{{Title: "a"}, {Title: "b"}, {Title: "c"}}
	db.Create(&articles)
	for i := range articles {
		_ = slotted.Add(db, &articles[i], "likes", int64(10*(i+1)))
	}
	prog, err := slotted.RollUpAll(db, &Article{}, slotted.RollUpOptions{BatchSize: 2})
	fmt.Println(err, prog.Records, prog.Batches)
	var top Article
	slotted.WithoutFill(db).Order("likes_count DESC").First(&top) // plain SQL sorts by the cache
	fmt.Println(top.Title, top.LikesCount)
	// Output:
	// <nil> 3 2
	// c 30
}

func Example_runner() {
	db, done := exampleDB()
	defer done()

	a := Article{Title: "Hello"}
	db.Create(&a)
	for range 30 {
		_ = slotted.Increment(db, &a, "likes")
	}
	ctx, stop := context.WithCancel(context.Background())
	r := slotted.Runner{
		Compact: &slotted.CompactOptions{},
		RollUp:  []any{&Article{}},
		OnPass: func(p slotted.Pass) {
			fmt.Println(p.Err, p.Compact.Counters, p.RollUp[0].Records)
			stop() // one pass is enough here; usually Run goes on until its context ends
		},
	}
	err := r.Run(ctx, db)
	var stored Article
	slotted.WithoutFill(db).First(&stored)
	fmt.Println(err, stored.LikesCount)
	// Output:
	// <nil> 1 1
	// <nil> 30
}

func Example_sweep() {
	db, done := exampleDB()
	defer done()

	gone, kept := Post{Title: "gone"}, Post{Title: "kept"}
	db.Create(&gone)
	db.Create(&kept)
	_ = slotted.Add(db, &gone, "likes", 3)
	_ = slotted.Add(db, &kept, "likes", 4)
	db.Exec("DELETE FROM posts WHERE id = ?", gone.ID) // behind gorm's back: the counter stays
	prog, err := slotted.Sweep(db, &Post{})
	n, _ := slotted.Count(db, &kept, "likes")
	fmt.Println(err, prog.Checked, prog.Orphans, prog.Rows, n)
	// Output: <nil> 2 1 1 4
}

func Example_deleteCleanup() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	_ = slotted.Add(db, &post, "likes", 3)
	db.Delete(&post) // a hard delete through gorm removes the post's counter rows too
	var rows int64
	slotted.Table(db).Count(&rows)
	fmt.Println(rows)
	// Output: 0
}

func Example_conflictOf() {
	fmt.Println(slotted.ConflictOf(errors.New("database is locked")))
	fmt.Println(slotted.ConflictOf(errors.New("Error 1213 (40001): Deadlock found when trying to get lock")))
	fmt.Println(slotted.ConflictOf(context.Canceled))
	fmt.Println(slotted.ConflictOf(nil) == slotted.NoConflict)
	// Output:
	// busy
	// deadlock
	// none
	// true
}

func Example_statsOf() {
	db, done := exampleDB()
	defer done()

	s, err := slotted.StatsOf(db)
	fmt.Println(err, s.Retries, len(s.Conflicts))

	plain, done2 := exampleRaw()
	defer done2()
	_, err = slotted.StatsOf(plain)
	fmt.Println(errors.Is(err, slotted.ErrNotRegistered))
	// Output:
	// <nil> 0 0
	// true
}

func Example_pluginStats() {
	db, done := exampleRaw()
	defer done()

	p := slotted.New(slotted.Config{})
	_ = db.Use(p)
	fmt.Printf("%+v\n", p.Stats())
	// Output: {Retries:0 Conflicts:map[] Batches:0 BatchedWrites:0 BatchRows:map[] Waiting:0 SettledLanded:0 SettledLost:0 OnceApplied:0 OnceDuplicates:0}
}

func Example_addEach() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	// One statement for both counters; the fields move too.
	if err := slotted.AddEach(db, &post, map[string]int64{"likes": 1, "views": 3}); err != nil {
		panic(err)
	}
	fmt.Println(post.Likes, post.Views)
	// Output: 1 3
}

func Example_addWhere() {
	db, done := exampleDB()
	defer done()

	db.Create(&[]Post{{Title: "draft"}, {Title: "draft"}, {Title: "live"}})
	// One INSERT … SELECT: every draft's views +1, each in a slot drawn for it.
	if err := slotted.AddWhere(db.Model(&Post{}).Where("title = ?", "draft"), "views", 1); err != nil {
		panic(err)
	}
	var posts []Post
	db.Order("id").Find(&posts)
	fmt.Println(posts[0].Views, posts[1].Views, posts[2].Views)
	// Output: 1 1 0
}

func Example_newBuffer() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: time.Second})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 1000; i++ {
		_ = buf.Add(&post, "views", 1) // in memory; returns at once
	}
	if err := buf.Close(context.Background()); err != nil { // flushes: one statement
		panic(err)
	}
	n, _ := slotted.Count(db, &post, "views")
	fmt.Println(n, buf.Stats().Written)
	// Output: 1000 1000
}

func Example_addMany() {
	db, done := exampleDB()
	defer done()

	posts := []Post{{Title: "a"}, {Title: "b"}}
	db.Create(&posts)
	// One statement for the counter of every post; the fields move too.
	if err := slotted.AddMany(db, &posts, "views", 2); err != nil {
		panic(err)
	}
	fmt.Println(posts[0].Views, posts[1].Views)
	// Output: 2 2
}

func Example_addRefs() {
	db, done := exampleDB()
	defer done()

	err := slotted.AddRefs(db, map[slotted.Ref]int64{
		{Type: "downloads", ID: "v1.2.0"}: 1,
		{Type: "downloads", ID: "v1.3.0"}: 5,
	})
	if err != nil {
		panic(err)
	}
	n, _ := slotted.CountRef(db, slotted.Ref{Type: "downloads", ID: "v1.3.0"})
	fmt.Println(n)
	// Output: 5
}

// exampleClock opens a fresh SQLite file whose plugin reads the time from
// *now, with the pages table (Page: views per day, hits per hour, likes).
func exampleClock(now *time.Time) (*gorm.DB, func()) {
	db, done := exampleOpen(slotted.Config{Now: func() time.Time { return *now }})
	if err := db.AutoMigrate(&Page{}, &PageComment{}); err != nil {
		panic(err)
	}
	return db, done
}

func Example_countBetween() {
	now := time.Date(2026, 11, 23, 23, 59, 59, 999e6, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	page := Page{Title: "Hello"}
	db.Create(&page)
	_ = slotted.Add(db, &page, "views", 3) // 23:59:59.999: the 23rd
	now = now.Add(time.Millisecond)
	_ = slotted.Add(db, &page, "views", 4) // 00:00: the 24th
	day := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	n23, _ := slotted.CountBetween(db, &page, "views", day, day.AddDate(0, 0, 1))
	both, _ := slotted.CountBetween(db, &page, "views", day, day.AddDate(0, 0, 2))
	all, _ := slotted.Count(db, &page, "views")
	fmt.Println(n23, both, all)
	// Output: 3 7 7
}

func Example_series() {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	page := Page{Title: "Hello"}
	db.Create(&page)
	_ = slotted.Add(db, &page, "views", 5)
	now = now.AddDate(0, 0, -2)
	_ = slotted.Add(db, &page, "views", 2)
	from := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	days, _ := slotted.Series(db, &page, "views", from, from.AddDate(0, 0, 4))
	for _, d := range days {
		fmt.Println(d.Start.Format("01-02"), d.Count)
	}
	// Output:
	// 11-20 0
	// 11-21 2
	// 11-22 0
	// 11-23 5
}

func Example_loadBetween() {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}}
	db.Create(&pages)
	_ = slotted.Add(db, &pages[0], "views", 10)
	_ = slotted.Add(db, &pages[1], "views", 1)
	now = now.AddDate(0, 0, -30)
	_ = slotted.Add(db, &pages[1], "views", 100) // a month ago
	db.Order("id").Find(&pages)
	fmt.Println(pages[0].Views, pages[1].Views) // all-time
	week := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC)
	_ = slotted.LoadBetween(db, &pages, week, week.AddDate(0, 0, 7), "views")
	fmt.Println(pages[0].Views, pages[1].Views) // this week
	// Output:
	// 10 101
	// 10 1
}

func Example_maintainBuckets() {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	page := Page{Title: "Hello"}
	db.Create(&page)
	for day := 0; day < 10; day++ { // ten days of writes to recent (buckets:day;keep:3;slots:4)
		for i := 0; i < 20; i++ {
			_ = slotted.Increment(db, &page, "recent")
		}
		now = now.AddDate(0, 0, 1)
	}
	now = now.AddDate(0, 0, -1) // the 10th day is today
	prog, err := slotted.MaintainBuckets(db, &page)
	fmt.Println(err, prog.Compacted, prog.Expired)
	kept, _ := slotted.CountBetween(db, &page, "recent", now.AddDate(0, 0, -9), now)
	all, _ := slotted.Count(db, &page, "recent")
	fmt.Println(kept, all)
	// Output:
	// <nil> 2 7
	// 60 200
}

func Example_top() {
	db, done := exampleClock(&time.Time{})
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}}
	db.Create(&pages)
	for i, n := range []int64{5, 9, 2} {
		_ = slotted.Add(db, &pages[i], "likes", n)
	}
	top, _ := slotted.Top(db, &Page{}, "likes", 2)
	for _, p := range top {
		fmt.Println(p.Title, p.Likes)
	}
	// Output:
	// b 9
	// a 5
}

func Example_topBetween() {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	pages := []Page{{Title: "old hit"}, {Title: "new"}}
	db.Create(&pages)
	_ = slotted.Add(db, &pages[1], "views", 30)
	now = now.AddDate(0, -1, 0)
	_ = slotted.Add(db, &pages[0], "views", 1000)
	week := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC)
	top, _ := slotted.TopBetween(db, &Page{}, "views", 1, week, week.AddDate(0, 0, 7))
	fmt.Println(top[0].Title, top[0].Views)
	// Output: new 30
}

func Example_topRefs() {
	db, done := exampleClock(&time.Time{})
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}}
	db.Create(&pages)
	_ = slotted.Add(db, &pages[0], "likes", 3)
	_ = slotted.Add(db, &pages[1], "likes", 8)
	refs, _ := slotted.TopRefs(db, &Page{}, "likes", 10)
	fmt.Printf("%+v\n", refs)
	// Output: [{Ref:{Type:pages.likes ID:2 Slots:4} Total:8} {Ref:{Type:pages.likes ID:1 Slots:4} Total:3}]
}

func Example_topRefsBetween() {
	now := time.Date(2026, 11, 23, 14, 30, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}}
	db.Create(&pages)
	_ = slotted.Add(db, &pages[0], "hits", 3) // hits: buckets:hour
	_ = slotted.Add(db, &pages[1], "hits", 1)
	now = now.Add(-3 * time.Hour)
	_ = slotted.Add(db, &pages[1], "hits", 50)
	refs, _ := slotted.TopRefsBetween(db, &Page{}, "hits", 1, time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC))
	fmt.Println(refs[0].Ref.ID, refs[0].Total)
	// Output: 1 3
}

func Example_orderBy() {
	db, done := exampleClock(&time.Time{})
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}, {Title: "d"}}
	db.Create(&pages)
	_ = slotted.Add(db, &pages[2], "likes", 4)
	_ = slotted.Add(db, &pages[0], "likes", 1)
	db.Create(&PageComment{PageID: pages[2].ID, Body: "nice"})
	var got []Page
	db.Scopes(slotted.OrderBy(&Page{}, "likes", "DESC")).Order("id").Preload("Comments").Limit(3).Find(&got)
	for _, p := range got {
		fmt.Println(p.Title, p.Likes, len(p.Comments))
	}
	err := db.Scopes(slotted.OrderBy(&Page{}, "likes", "DESC; DROP TABLE pages")).Find(&got).Error
	fmt.Println(errors.Is(err, slotted.ErrInvalidArgument))
	// Output:
	// c 4 1
	// a 1 0
	// b 0 0
	// true
}

func Example_orderByBetween() {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	db, done := exampleClock(&now)
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}}
	db.Create(&pages)
	_ = slotted.Add(db, &pages[0], "views", 2)
	_ = slotted.Add(db, &pages[1], "views", 5)
	now = now.AddDate(0, 0, -10)
	_ = slotted.Add(db, &pages[0], "views", 100)
	var got []Page
	week := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC)
	db.Scopes(slotted.OrderByBetween(&Page{}, "views", "DESC", week, week.AddDate(0, 0, 7))).Find(&got)
	fmt.Println(got[0].Title, got[1].Title)
	// Output: b a
}

func Example_whereCounter() {
	db, done := exampleClock(&time.Time{})
	defer done()

	pages := []Page{{Title: "a"}, {Title: "b"}, {Title: "c"}}
	db.Create(&pages)
	_ = slotted.Add(db, &pages[1], "likes", 10)
	_ = slotted.Add(db, &pages[2], "likes", 3)
	var popular []Page
	var n int64
	db.Model(&Page{}).Scopes(slotted.WhereCounter(&Page{}, "likes", ">=", 3)).Count(&n)
	db.Scopes(slotted.WhereCounter(&Page{}, "likes", ">=", 3), slotted.OrderBy(&Page{}, "likes", "ASC")).Find(&popular)
	fmt.Println(n, popular[0].Title, popular[1].Title)
	// Output: 2 c b
}

func Example_pruneMarkers() {
	db, done := exampleDB()
	defer done()

	// Outcome markers of processes that exited, made over 24 hours ago, go
	// (a Runner does this every pass). SQLite has none: nothing to prune.
	n, err := slotted.PruneMarkers(db)
	fmt.Println(n, err)
	// Output:
	// 0 <nil>
}
