package slotted_test

import (
	"fmt"
	"log"
	"net/http"

	"github.com/slotted-go/slotted"
)

func ExampleList() {
	// GET /posts?after=<cursor>: 20 posts by likes, from the cache column (Post has cache:likes_count), so
	// as fresh as the last RollUp; slotted.ReadExact sums the live slot rows instead.
	handler := func(w http.ResponseWriter, r *http.Request) {
		page, err := slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 20, After: r.URL.Query().Get("after")})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest) // a bad cursor is ErrInvalidArgument
			return
		}
		for i, p := range page.Items {
			fmt.Fprintln(w, p.Title, page.Totals[i])
		}
		if page.Next != "" {
			fmt.Fprintf(w, "next: /posts?after=%s\n", page.Next)
		}
	}
	http.HandleFunc("/posts", handler)
}

func ExampleTrending() {
	// Posts by views of the last 7 daily buckets, each day weighing half the day after it.
	type Article struct {
		ID    uint
		Title string
		Views int64 `gorm:"-" slotted:"views;buckets:day"`
	}
	hot, err := slotted.Trending(db, &Article{}, "views", slotted.TrendOptions{Buckets: 7, HalfLife: 1, Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	for i, a := range hot.Items {
		fmt.Printf("%s: score %.1f, %d views this week\n", a.Title, hot.Scores[i], a.Views)
	}

}
