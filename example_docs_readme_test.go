package slotted_test

import (
	"log"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of README.md, compiled (not run): docs/README.md says how they are tied.

func Example_readmeIntro() {
	var (
		post  Post
		posts []Post
	)
	db.Use(slotted.New(slotted.Config{}))

	slotted.Increment(db, &post, "likes") // instead of db.Model(&post).UpdateColumn("likes", gorm.Expr("likes + 1"))
	db.Find(&posts)                       // post.Likes filled for every post with one extra query
}

func Example_readmeModel() {
	type Post struct {
		ID    uint
		Title string
		Likes int64 `gorm:"-" slotted:"likes"`             // a counter, not a column
		Views int64 `gorm:"-" slotted:"views;buckets:day"` // also counted per day
	}

	if err := db.Use(slotted.New(slotted.Config{})); err != nil { // creates slotted_counters once
		log.Fatal(err)
	}
	_ = Post{}
}

func Example_readmeIncrement() {
	post := Post{ID: 42}                         // the key is all a write needs
	err := slotted.Increment(db, &post, "likes") // post.Likes moves too
	_ = err
}

func Example_readmeRead() {
	post := Post{ID: 42}
	n, err := slotted.Count(db, &post, "likes")

	var posts []Post
	err = db.Order("id").Limit(3).Find(&posts).Error // posts[i].Likes and .Views filled
	_, _ = n, err
}

func Example_readmeLike() {
	post := Post{ID: 42}
	liked, err := slotted.AddOnce(db, &post, "likes", 1, "user:7")   // false if user 7 liked it already
	unliked, err := slotted.RemoveOnce(db, &post, "likes", "user:7") // the undo
	_, _, _ = liked, unliked, err
}

func Example_readmeViews() {
	post := Video{ID: 42}
	err := slotted.Increment(db, &post, "views")
	week, err := slotted.CountIn(db, &post, "views", slotted.LastDays(7)) // today and the 6 days before
	_, _ = week, err
}

func Example_readmeCounterCache() {
	type Comment struct {
		ID     uint
		PostID uint
	}
	type Post struct {
		ID            uint
		Comments      []Comment // gorm's has-many
		CommentsCount int64     `gorm:"-" slotted:"comments"` // kept equal to the number of comments
	}

	err := slotted.CounterCache(db, &Post{}, "Comments", "comments") // once, after db.Use
	err = db.Create(&Comment{PostID: 42}).Error
	_ = err
}
