package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// exampleDB opens a fresh SQLite file with the plugin registered.
func exampleDB() (*gorm.DB, func()) {
	dir, err := os.MkdirTemp("", "slotted-example")
	if err != nil {
		panic(err)
	}
	db, err := gorm.Open(sqlite.Open("file:"+filepath.Join(dir, "ex.db")+"?_busy_timeout=5000"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	if err := db.Use(slotted.New(slotted.Config{})); err != nil {
		panic(err)
	}
	if err := db.AutoMigrate(&Post{}); err != nil {
		panic(err)
	}
	return db, func() { os.RemoveAll(dir) }
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

func Example_refOf() {
	db, done := exampleDB()
	defer done()

	ref, _ := slotted.RefOf(db, &Post{ID: 42}, "likes")
	fmt.Printf("%+v\n", ref)
	// Output: {Type:posts.likes ID:42}
}

func ExampleAddEach() {
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

func ExampleAddWhere() {
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

func ExampleNewBuffer() {
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
