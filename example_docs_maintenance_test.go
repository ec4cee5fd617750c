package slotted_test

import (
	"context"
	"log"
	"time"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/maintenance.md, compiled (not run): docs/README.md says how they are tied.

func Example_docMaintenance1() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		err := slotted.Compact(db, &post, "likes") // or slotted.CompactRef(db, ref)
		_ = err
	}
}

func Example_docMaintenance2() {
	var (
		lastRun slotted.CompactProgress
		post    Post
		posts   []Post
		ctx     = context.Background()
	)
	_ = lastRun
	_, _, _ = post, posts, ctx
	{
		prog, err := slotted.CompactAll(db.WithContext(ctx), slotted.CompactOptions{
			RecordType: "posts.likes", // optional: one kind of counter
			MinRows:    10,            // only counters with more than 10 rows (default 1)
			BatchSize:  100,           // counters per transaction (default)
			After:      lastRun.Last,  // resume an interrupted run
			Progress:   func(p slotted.CompactProgress) { log.Printf("%d counters, %d rows removed", p.Counters, p.RowsRemoved) },
		})
		_ = prog
		_ = err
	}
}

func Example_docMaintenance3() {
	type Like struct {
		ID     uint
		PostID uint
	}
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		var real int64
		db.Model(&Like{}).Where("post_id = ?", post.ID).Count(&real)
		err := slotted.Reset(db, &post, "likes", real) // or slotted.ResetRef(db, ref, real)
		_ = err
	}
}

func Example_docMaintenance4() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		type Post struct {
			ID         uint
			Likes      int64 `gorm:"-" slotted:"likes;cache:likes_count"`
			LikesCount int64 // a real column: db.Order("likes_count DESC").Limit(10).Find(&top) needs no counter query
		}

		slotted.RollUp(db, &post)      // one record, a slice, or named counters: RollUp(db, &posts, "likes")
		slotted.RollUpAll(db, &Post{}) // every post, 500 at a time, resumable with After
	}
}

func Example_docMaintenance5() {
	var (
		metrics durations
		post    Post
		posts   []Post
		ctx     = context.Background()
	)
	_, _, _ = post, posts, ctx
	_ = metrics
	{
		r := slotted.Runner{
			Interval:  time.Minute,                          // default
			Compact:   &slotted.CompactOptions{MinRows: 10}, // nil: don't compact
			RollUp:    []any{&Post{}},                       // models whose cache columns to refresh
			PruneKeys: true,                                 // delete AddOnce's expired keys (ExpireAfter)
			OnError:   func(err error) { log.Print(err) },   // default: the gorm logger
			OnPass:    func(p slotted.Pass) { metrics.Observe(p.Took) },
			Buckets:   &slotted.BucketOptions{Models: []any{&Post{}}}, // closed buckets compacted, expired ones deleted
		}
		go r.Run(ctx, db) // returns nil when ctx ends
	}
}

func Example_docMaintenance6() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		db.Delete(&post)
		// DELETE FROM `posts` WHERE `posts`.`id` = 42
		// DELETE FROM `slotted_counters` WHERE `record_type` IN ('posts.likes','posts.views') AND `record_id` IN ('42')
		db.Where("author_id = ?", 7).Delete(&Post{})
		// SELECT `posts`.`id` FROM `posts` WHERE author_id = 7     -- the ids, inside the same transaction, first
	}
}

func Example_docMaintenance7() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		prog, err := slotted.Sweep(db, &Post{}, slotted.SweepOptions{BatchSize: 500})
		_ = prog
		_ = err
	}
}

// durations stands for a metrics library in the Runner's OnPass.
type durations struct{}

func (durations) Observe(time.Duration) {}
