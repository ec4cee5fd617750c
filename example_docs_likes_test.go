package slotted_test

import (
	"context"
	"errors"
	"net/http"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/likes.md, compiled (not run): docs/README.md says how they are tied.

func Example_docLikes1() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		type Post struct {
			ID    uint
			Title string
			Likes int64 `gorm:"-" slotted:"likes"`         // the counter
			Liked bool  `gorm:"-" slotted:"likes;applied"` // did the current user like it? (filled on request)
		}
		_ = Post{}
	}
}

func Example_docLikes2() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		liked, err := slotted.AddOnce(db, &post, "likes", 1, "user:7", slotted.OnceOptions{KeepForever: true}) // false: already liked
		unliked, err := slotted.RemoveOnce(db, &post, "likes", "user:7")                                       // false: was not liked
		_ = liked
		_ = err
		_ = unliked
	}
}

func Example_docLikes3() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		liked, err := slotted.Applied(db, &post, "likes", "user:7")      // one post
		flags, err := slotted.AppliedMany(db, &posts, "likes", "user:7") // flags[i] is posts[i]'s; one statement for the page

		slotted.WithOnceKey(db, "user:7").Order("id DESC").Limit(20).Find(&posts) // auto-fill: posts[i].Liked and .Likes
		slotted.LoadApplied(db, &posts, "user:7")                                 // the same for posts you already hold
		_ = liked
		_ = err
		_ = flags
	}
}

func Example_docLikes4() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		db.Scopes(slotted.WhereApplied(&Post{}, "likes", "user:7")).Order("id DESC").Limit(20).Find(&posts)
		// SELECT * FROM `posts` WHERE EXISTS (SELECT 1 FROM `slotted_once` WHERE `record_type` = 'posts.likes' AND `op_key` = 'user:7'
		//   AND (`expires_at` IS NULL OR `expires_at` > '...') AND `record_id` = CAST(`posts`.`id` AS CHAR)) ORDER BY id DESC LIMIT 20
	}
}

func Example_docLikes5() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		keys, err := slotted.OnceKeys(db, &post, "likes", "", 20)                // the first 20
		more, err := slotted.OnceKeys(db, &post, "likes", keys[len(keys)-1], 20) // the next 20; a short page is the last
		_ = err
		_ = more
	}
}

func Example_docLikes6() {
	var (
		id    uint
		w     http.ResponseWriter
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	_, _ = id, w
	{
		err := slotted.Increment(slotted.MustExist(db), &Post{ID: id}, "likes")
		if errors.Is(err, gorm.ErrRecordNotFound) { // slotted.ErrRecordNotFound wraps it
			http.Error(w, "no such post", http.StatusNotFound) // nothing was written
			return
		}
	}
}
