package slotted_test

import (
	"context"
	"time"

	"github.com/slotted-go/slotted"
)

// The ```go blocks of docs/listings.md, compiled (not run): docs/README.md says how they are tied.

func Example_docListings1() {
	var (
		weekAgo = time.Now().AddDate(0, 0, -7)
		now     = time.Now()
		post    Post
		posts   []Post
		ctx     = context.Background()
	)
	_, _, _ = post, posts, ctx
	_, _ = weekAgo, now
	{
		page, err := slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 20})                  // first page
		page, err = slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 20, After: page.Next}) // the next one
		page, err = slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 20, Read: slotted.ReadExact})
		page, err = slotted.List(db.Where("author_id = ?", 7), &Post{}, "likes", slotted.ListOptions{Limit: 20})
		page, err = slotted.List(db, &Post{}, "views", slotted.ListOptions{Limit: 20, From: weekAgo, To: now}) // a window
		// page.Items []Post (counters auto-filled), page.Totals []int64 (what each was sorted by), page.Next string, page.Read
		_ = err
	}
}

func Example_docListings2() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		hot, err := slotted.Trending(db, &Post{}, "views", slotted.TrendOptions{Buckets: 7, HalfLife: 1, Limit: 10})
		// hot.Items: the 10 hottest posts, Views holding their plain total over the 7 days
		// hot.Scores: Σ views(day) × 0.5^(age in days / 1): today × 1, yesterday × 0.5, ...
		next, err := slotted.Trending(db, &Post{}, "views", slotted.TrendOptions{Buckets: 7, HalfLife: 1, Limit: 10, After: hot.Next})
		_ = err
		_ = next
	}
}

func Example_docListings3() {
	var (
		weekAgo = time.Now().AddDate(0, 0, -7)
		now     = time.Now()
		popular []Post
		post    Post
		posts   []Post
		ctx     = context.Background()
	)
	_, _, _ = post, posts, ctx
	_, _, _ = weekAgo, now, popular
	{
		top, err := slotted.Top(db, &Post{}, "likes", 10)                          // []Post, counters filled
		top, err = slotted.Top(db.Where("author_id = ?", 7), &Post{}, "likes", 10) // among an author's posts
		week, err := slotted.TopBetween(db, &Post{}, "views", 10, weekAgo, now)    // Views holds the week's total
		refs, err := slotted.TopRefs(db, &Post{}, "likes", 10)                     // []RefTotal{Ref, Total}: the counter table alone
		refs, err = slotted.TopRefsBetween(db, &Post{}, "views", 10, weekAgo, now)

		db.Scopes(slotted.OrderBy(&Post{}, "likes", "DESC")).Order("id").Limit(20).Offset(40).Preload("Author").Find(&posts)
		db.Scopes(slotted.OrderByBetween(&Post{}, "views", "DESC", weekAgo, now)).Limit(10).Find(&posts)
		db.Scopes(slotted.WhereCounter(&Post{}, "likes", ">=", 100)).Find(&popular) // =, <>, !=, <, <=, >, >=
		_ = top
		_ = err
		_ = week
		_ = refs
	}
}
