package slotted_test

import (
	"context"
	"log"
	"time"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/write-modes.md, compiled (not run): docs/README.md says how they are tied.

func Example_docWriteModes1() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		slotted.Increment(db, &post, "views") // posts.views (the all-time total) + posts.views@2026-11-23 (today)
	}
}

func Example_docWriteModes2() {
	var (
		requestID = "9b2f61c4"
		ref       = slotted.Ref{Type: "123", ID: "456"}
		key       = "request-1"
		post      Post
		posts     []Post
		ctx       = context.Background()
	)
	_, _, _ = post, posts, ctx
	_, _, _ = requestID, ref, key
	{
		applied, err := slotted.AddOnce(db, &post, "views", 1, requestID, slotted.OnceOptions{ExpireAfter: 24 * time.Hour})
		// err != nil and ambiguous? Call it again with the same requestID: applied is false if the first one committed.

		liked, err := slotted.AddOnce(db, &post, "likes", 1, "user:7")   // one like per user, no likes table; kept forever
		unliked, err := slotted.RemoveOnce(db, &post, "likes", "user:7") // the undo: subtracts what was added, frees the key
		applied, err = slotted.AddRefOnce(db, ref, 1, key)               // and RemoveRefOnce(db, ref, key)
		_ = applied
		_ = err
		_ = liked
		_ = unliked
	}
}

func Example_docWriteModes3() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		// 64 request goroutines liking post 42 at the same moment
		err := slotted.Increment(db, &post, "likes") // returns after this +1 has committed, with its statement's error
		_ = err
	}
}

func Example_docWriteModes4() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		slotted.AddEach(db, &post, map[string]int64{"likes": 1, "views": 3}) // several counters of one record, like Laravel's incrementEach
	}
}

func Example_docWriteModes5() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		slotted.AddMany(db, posts, "views", 1) // every record of a slice (values or pointers); a record listed twice counts once
		slotted.AddRefs(db, map[slotted.Ref]int64{{Type: "downloads", ID: "a"}: 1, {Type: "downloads", ID: "b"}: 5})
	}
}

func Example_docWriteModes6() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		slotted.AddWhere(db.Model(&Post{}).Where("author_id = ?", 7), "views", 1) // Post::where(...)->increment('views')
	}
}

func Example_docWriteModes7() {
	var (
		ref   = slotted.Ref{Type: "123", ID: "456"}
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	_ = ref
	{
		buf, err := slotted.NewBuffer(db, slotted.BufferOptions{
			Interval:   time.Second,                        // flush every second (default)
			FlushAt:    1024,                               // and as soon as this many counters are pending (default)
			MaxPending: 100_000,                            // counters held at most (default); then Add of a new counter fails with ErrBufferFull
			OnError:    func(err error) { log.Print(err) }, // failed background flushes (default: the gorm logger)
		})
		if err != nil {
			log.Fatal(err) // ErrInvalidConfig: a bad option
		}
		defer buf.Close(ctx)       // stops the background flushes and flushes the rest
		buf.Add(&post, "views", 1) // returns at once (~0.2 µs); post.Views moves now, the database on the next flush
		buf.AddRef(ref, 1)
		buf.Flush(ctx)   // write everything now
		s := buf.Stats() // Pending, PendingWrites, Flushes, FlushErrors, Written, Rows, Overflowed, LastError
		_ = s
	}
}
