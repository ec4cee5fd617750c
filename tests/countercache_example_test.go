package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// exampleCacheDB opens a fresh SQLite file with the plugin and the counter-cache models.
func exampleCacheDB() (*gorm.DB, func()) {
	dir, err := os.MkdirTemp("", "slotted-example")
	if err != nil {
		panic(err)
	}
	db, err := gorm.Open(sqliteOpen(sqliteDSN(filepath.Join(dir, "ex.db"), 5000, false)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	if err := db.Use(slotted.New(slotted.Config{})); err != nil {
		panic(err)
	}
	if err := db.AutoMigrate(&Topic{}, &Reply{}, &Customer{}, &Invoice{}); err != nil {
		panic(err)
	}
	return db, func() { os.RemoveAll(dir) }
}

func Example_counterCache() {
	db, done := exampleCacheDB()
	defer done()

	// Topic.Count is `slotted:"replies"`; Topic has Replies []Reply (has-many on TopicID).
	if err := slotted.CounterCache(db, &Topic{}, "Replies", "replies"); err != nil {
		fmt.Println(err)
	}
	topic := Topic{Title: "hello"}
	db.Create(&topic)
	db.Create(&[]Reply{{TopicID: &topic.ID}, {TopicID: &topic.ID}, {TopicID: &topic.ID}})
	var first Reply
	db.First(&first)
	db.Delete(&Reply{ID: first.ID}) // only the key: the plugin reads the topic_id first

	db.First(&topic, topic.ID) // the counter is auto-filled like any other
	fmt.Println(topic.Count)
	// Output: 2
}

func Example_counterCacheConditionAndSum() {
	db, done := exampleCacheDB()
	defer done()

	// Count only published replies (SQL for the database and Fix, Go for new records), and sum points.
	_ = slotted.CounterCache(db, &Topic{}, "Replies", "published",
		slotted.CacheOptions{Where: "published = ?", WhereArgs: []any{true}, Match: func(r *Reply) bool { return r.Published }})
	_ = slotted.CounterCache(db, &Topic{}, "Replies", "points", slotted.CacheOptions{Sum: "Points"})

	topic := Topic{Title: "scores"}
	db.Create(&topic)
	draft := Reply{TopicID: &topic.ID, Points: 5}
	db.Create(&draft)
	db.Create(&Reply{TopicID: &topic.ID, Points: 7, Published: true})
	db.Model(&draft).Update("published", true) // flipping the condition moves the count

	db.First(&topic, topic.ID)
	fmt.Println(topic.Published, topic.Points)
	// Output: 2 12
}

func Example_counterCacheBelongsTo() {
	db, done := exampleCacheDB()
	defer done()

	// Declared from the child's side: Invoice belongs to Customer; the sum of totals per customer.
	_ = slotted.CounterCache(db, &Invoice{}, "Customer", "spent", slotted.CacheOptions{Sum: "Total"})

	db.Create(&Customer{ID: "ann"})
	db.Create(&[]Invoice{{CustomerID: "ann", Total: 30}, {CustomerID: "ann", Total: 12}})
	spent, _ := slotted.Count(db, &Customer{ID: "ann"}, "spent")
	fmt.Println(spent)
	// Output: 42
}

func Example_fix() {
	db, done := exampleCacheDB()
	defer done()
	_ = slotted.CounterCache(db, &Topic{}, "Replies", "replies")

	topic := Topic{Title: "drifted"}
	db.Create(&topic)
	db.Create(&Reply{TopicID: &topic.ID})
	db.Exec("INSERT INTO replies (topic_id) VALUES (?), (?)", topic.ID, topic.ID) // raw SQL: not counted

	drift, _ := slotted.Fix(db, &topic, slotted.FixOptions{DryRun: true})
	fmt.Printf("%s: stored %d, actual %d\n", drift[0].Counter, drift[0].Stored, drift[0].Actual)

	prog, _ := slotted.FixAll(db, &Topic{}) // every topic, 100 per transaction
	fmt.Println(prog.Records, prog.Drifted)
	n, _ := slotted.Count(db, &topic, "replies")
	fmt.Println(n)
	// Output:
	// replies: stored 1, actual 3
	// 1 1
	// 3
}

func Example_seedOnCreate() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "imported", Likes: 40} // e.g. migrated from another system
	db.Create(&post)                           // the counter is seeded with 40 in the same transaction
	n, _ := slotted.Count(db, &post, "likes")
	fmt.Println(n)
	// Output: 40
}

func Example_weight() {
	db, done := exampleCacheDB()
	defer done()

	// A published reply counts 3 (counter_culture's delta_magnitude).
	_ = slotted.CounterCache(db, &Topic{}, "Replies", "weighted", slotted.CacheOptions{Weight: 3, Where: "published = ?", WhereArgs: []any{true}, Match: func(r *Reply) bool { return r.Published }})

	topic := Topic{Title: "weights"}
	db.Create(&topic)
	db.Create(&[]Reply{{TopicID: &topic.ID, Published: true}, {TopicID: &topic.ID}, {TopicID: &topic.ID, Published: true}})
	n, _ := slotted.Count(db, &topic, "weighted")
	fmt.Println(n)
	// Output: 6
}

func Example_withDeleted() {
	db, done := exampleCacheDB()
	defer done()

	// Every reply ever written, soft-deleted or not; and the live ones for comparison.
	_ = slotted.CounterCache(db, &Topic{}, "Replies", "ever", slotted.CacheOptions{WithDeleted: true})
	_ = slotted.CounterCache(db, &Topic{}, "Replies", "replies")

	topic := Topic{Title: "history"}
	db.Create(&topic)
	r := Reply{TopicID: &topic.ID}
	db.Create(&r)
	db.Create(&Reply{TopicID: &topic.ID})
	db.Delete(&r) // a soft delete: still counted by "ever"

	db.First(&topic, topic.ID)
	fmt.Println(topic.Ever, topic.Count)
	db.Unscoped().Delete(&r) // a hard delete uncounts it
	db.First(&topic, topic.ID)
	fmt.Println(topic.Ever, topic.Count)
	// Output:
	// 2 1
	// 1 1
}

func Example_touch() {
	db, done := exampleCacheDB()
	defer done()
	if err := db.AutoMigrate(&TouchForum{}, &TouchPost{}); err != nil {
		panic(err)
	}

	// TouchForum has UpdatedAt: every change of the count sets it, in the same transaction.
	_ = slotted.CounterCache(db, &TouchForum{}, "Posts", "posts", slotted.CacheOptions{Touch: true})

	forum := TouchForum{}
	db.Create(&forum)
	db.Model(&forum).UpdateColumn("updated_at", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	db.Create(&TouchPost{TouchForumID: forum.ID})

	db.First(&forum, forum.ID)
	fmt.Println(forum.Count, forum.UpdatedAt.Year() > 2001)
	// Output: 1 true
}

func Example_sumCounter() {
	db, done := exampleDB()
	defer done()
	if err := db.AutoMigrate(&MLRegion{}, &MLCompany{}, &MLUser{}, &MLReview{}); err != nil {
		panic(err)
	}
	_ = slotted.CounterCache(db, &MLUser{}, "Reviews", "reviews")
	_ = slotted.CounterCache(db, &MLCompany{}, "Users", "reviews", slotted.CacheOptions{SumCounter: "reviews"})
	acme, other := MLCompany{}, MLCompany{}
	db.Create(&acme)
	db.Create(&other)
	// A copy of the id, not &acme.ID: gorm's Update below stores the new
	// company_id through this pointer, which would turn acme into other.
	acmeID := acme.ID
	ann := MLUser{CompanyID: &acmeID}
	db.Create(&ann)
	db.Create(&[]MLReview{{UserID: &ann.ID}, {UserID: &ann.ID}, {UserID: &ann.ID}})
	n, _ := slotted.Count(db, &acme, "reviews")
	fmt.Println(n)
	db.Model(&ann).Update("company_id", other.ID) // ann's 3 reviews should move with her: -3 on acme, +3 on other
	a, _ := slotted.Count(db, &acme, "reviews")
	o, _ := slotted.Count(db, &other, "reviews")
	fmt.Println(a, o)
	// Output:
	// 3
	// 0 3
}
