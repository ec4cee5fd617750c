package slotted_test

import (
	"context"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/reads-and-writes.md, compiled (not run): docs/README.md says how they are tied.

func Example_docReadsAndWrites1() {
	var (
		dialector gorm.Dialector
		post      Post
		posts     []Post
		ctx       = context.Background()
	)
	_, _, _ = post, posts, ctx
	_ = dialector
	_ = func() error {
		type Post struct {
			ID    uint
			Title string
			Likes int64 `gorm:"-" slotted:"likes"`                 // a counter, not a column
			Views int64 `gorm:"-" slotted:"views;slots:16"`        // 16 slot rows instead of Config.Slots
			Stars int   `gorm:"-" slotted:"stars;type:post_stars"` // fixed record_type: renaming the table keeps the counts
		}

		db, _ := gorm.Open(dialector, &gorm.Config{})                 // mysql.Open(dsn), postgres.Open(dsn), sqlite.Open(file)
		if err := db.Use(slotted.New(slotted.Config{})); err != nil { // migrates slotted_counters
			return err
		}
		_ = Post{}
		return nil
	}()
}

func Example_docReadsAndWrites2() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		err := slotted.Increment(db, &post, "likes") // post.Likes is 1 higher afterwards, like Laravel's increment
		err = slotted.Decrement(db, &post, "Likes")  // the tag name or the Go field name
		err = slotted.Add(db, &post, "likes", 10)    // any delta; 0 writes nothing
		_ = err
	}
}

func Example_docReadsAndWrites3() {
	var (
		id    uint
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	_ = id
	_ = func() error {
		var post Post
		if err := slotted.WithoutFill(db).First(&post, id).Error; err != nil { // or db.Scopes(slotted.WithoutFill).First(&post, id)
			return err // gorm.ErrRecordNotFound: 404
		}
		err := slotted.Increment(db, &post, "likes")
		err = slotted.Increment(db, &Post{ID: 42}, "likes") // or no read at all: the key is enough
		_ = err
		return nil
	}()
}

func Example_docReadsAndWrites4() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		n, err := slotted.Count(db, &post, "likes")
		_ = n
		_ = err
	}
}

func Example_docReadsAndWrites5() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		var posts []Post
		db.Order("id").Limit(3).Find(&posts) // counters filled automatically (First/Take/Last/Find, values or pointers)
		slotted.WithoutFill(db).Find(&posts) // this query only: no counter read (db.Scopes(slotted.WithoutFill) too)
		slotted.Load(db, &posts, "likes")    // explicit; no names = every counter of the model
	}
}

func Example_docReadsAndWrites6() {
	var (
		like  Comment
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	_ = like
	{
		db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&like).Error; err != nil {
				return err
			}
			return slotted.Increment(tx, &post, "likes") // joins tx: rolls back with it
		})
		slotted.Increment(db.WithContext(ctx), &post, "likes") // cancellation and deadlines are honoured
	}
}
