package slotted_test

import (
	"context"
	"log"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/counter-caches.md, compiled (not run): docs/README.md says how they are tied.

func Example_docCounterCaches1() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		type Post struct {
			ID            uint
			Comments      []Comment // gorm's has-many (has-one and the child's belongs-to work too)
			CommentsCount int64     `gorm:"-" slotted:"comments"` // a normal slotted counter: auto-filled, Compact/RollUp work
			Published     int64     `gorm:"-" slotted:"published"`
			Score         int64     `gorm:"-" slotted:"score"`
			Ever          int64     `gorm:"-" slotted:"ever"`
		}
		type Comment struct {
			ID        uint
			PostID    *uint `gorm:"index"` // nil or 0: counted nowhere
			Published bool
			Stars     int64
			DeletedAt gorm.DeletedAt `gorm:"index"` // soft-deleted comments are not counted (unless WithDeleted)
		}

		// Once, after db.Use and before writing children:
		slotted.CounterCache(db, &Post{}, "Comments", "comments")
		slotted.CounterCache(db, &Post{}, "Comments", "published", slotted.CacheOptions{
			Where: "published = ?", WhereArgs: []any{true}, // SQL: the database and Fix evaluate it
			Match: func(c *Comment) bool { return c.Published }, // optional, Go: evaluated on new records
		})
		slotted.CounterCache(db, &Post{}, "Comments", "score", slotted.CacheOptions{Sum: "Stars", Weight: 2}) // 2 × stars
		slotted.CounterCache(db, &Post{}, "Comments", "ever", slotted.CacheOptions{WithDeleted: true})        // soft-deleted too
		slotted.CounterCache(db, &Comment{}, "Post", "comments_again")                                        // from the child's belongs-to: the same thing
	}
}

func Example_docCounterCaches2() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		type Post struct {
			ID       uint
			Comments []Comment `gorm:"polymorphic:Owner"`
			Count    int64     `gorm:"-" slotted:"comments"`
		}
		type Video struct { /* the same */
		}
		type Comment struct {
			ID        uint
			OwnerID   uint   `gorm:"index"`
			OwnerType string `gorm:"size:32;index"`
		}

		slotted.CounterCache(db, &Post{}, "Comments", "comments")  // counts comments WHERE owner_type = 'posts'
		slotted.CounterCache(db, &Video{}, "Comments", "comments") // and 'videos'
		_ = Comment{}
	}
}

func Example_docCounterCaches3() {
	var (
		comments []Comment
		post     Post
		posts    []Post
		ctx      = context.Background()
	)
	_, _, _ = post, posts, ctx
	_ = comments
	{
		db.Create(&comments) // 3 comments: 2 on post 42, 1 on post 7
	}
}

func Example_docCounterCaches4() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		db.Model(&Comment{}).Where("post_id = ?", 42).Update("post_id", 7) // a bulk move
	}
}

func Example_docCounterCaches5() {
	type Customer struct {
		ID    string
		Spent int64 `gorm:"-" slotted:"spent"` // the sum of the customer's orders' Total
	}
	type Order struct {
		ID         uint
		CustomerID string
		Customer   *Customer // belongs-to
		Total      int64
	}

	// Once, after db.Use and before writing children (like db.SetupJoinTable):
	err := slotted.CounterCache(db, &Order{}, "Customer", "spent", slotted.CacheOptions{Sum: "Total"}) // declared from the child's belongs-to
	_ = err
}

func Example_docCounterCaches6() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		db.Delete(&Comment{ID: 9}) // only the key in memory: the post_id is read from the row first
	}
}

func Example_docCounterCaches7() {
	var (
		lastRun slotted.FixProgress
		post    Post
		posts   []Post
		ctx     = context.Background()
	)
	_ = lastRun
	_, _, _ = post, posts, ctx
	{
		drift, err := slotted.Fix(db, &post, slotted.FixOptions{DryRun: true}) // or a slice of posts; DryRun changes nothing
		// [{Record: 42, Counter: "comments", Ref: {posts.comments 42}, Stored: 7, Actual: 5}]
		drift, err = slotted.Fix(db, &post) // repairs; post.CommentsCount = 5

		prog, err := slotted.FixAll(db.WithContext(ctx), &Post{}, slotted.FixOptions{
			Counters:  []string{"comments"}, // default: every counter cache of Post
			Scope:     func(q *gorm.DB) *gorm.DB { return q.Where("author_id = ?", 7) },
			BatchSize: 100,          // posts per transaction (default)
			After:     lastRun.Last, // resume
			OnDrift:   func(d slotted.Drift) { log.Printf("%v: %d -> %d", d.Ref, d.Stored, d.Actual) },
			Progress:  func(p slotted.FixProgress) { log.Printf("%d posts, %d fixed", p.Records, p.Drifted) },
		})
		_ = drift
		_ = err
		_ = prog
	}
}

func Example_docMany2Many() {
	{
		type Post struct {
			ID    uint
			Title string
		}
		type Tag struct {
			ID        uint
			Name      string
			Posts     []Post `gorm:"many2many:post_tags"` // counted from this side: the tag's posts
			PostCount int64  `gorm:"-" slotted:"posts"`
			Weighted  int64  `gorm:"-" slotted:"weighted"`
		}
		var (
			golang, sql Tag
			post, other Post
		)

		slotted.CounterCache(db, &Tag{}, "Posts", "posts")                                     // post_tags rows with the tag's tag_id
		slotted.CounterCache(db, &Tag{}, "Posts", "weighted", slotted.CacheOptions{Weight: 3}) // 3 per row

		db.Create(&Tag{Name: "db", Posts: []Post{post, {Title: "new"}}}) // +2 on the new tag
		db.Model(&golang).Association("Posts").Append(&post)             // +1, or nothing if the pair is there
		db.Model(&golang).Association("Posts").Delete(&post)             // -1
		db.Model(&sql).Association("Posts").Replace(&post, &other)       // the new pairs counted, the removed ones uncounted
		db.Model(&sql).Association("Posts").Clear()                      // all uncounted
		db.Delete(&post)                                                 // its post_tags rows deleted too, uncounted on their tags
	}
}
