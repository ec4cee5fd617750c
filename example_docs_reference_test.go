package slotted_test

import (
	"context"

	"github.com/slotted-go/slotted"
	"github.com/slotted-go/slotted/diagnose"
)

// The ```go blocks of docs/reference.md, compiled (not run): docs/README.md says how they are tied.

func Example_docReference1() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		ref := slotted.Ref{Type: "123", ID: "456"}
		err := slotted.AddRef(db, ref, 1)                                          // spread over Config.Slots slots
		err = slotted.AddRef(db, slotted.Ref{Type: "123", ID: "456", Slots: 8}, 1) // over 8
		n, err := slotted.CountRef(db, ref)                                        // reads every row, whatever the slot count
		ref, err = slotted.RefOf(db, &post, "views")                               // Ref{Type: "posts.views", ID: "42", Slots: 16}: the tag's slots:16
		_ = err
		_ = n
	}
}

func Example_docReference2() {
	var (
		post  Post
		posts []Post
		ctx   = context.Background()
	)
	_, _, _ = post, posts, ctx
	{
		r, err := diagnose.Run(db, diagnose.Options{ParentTables: []string{"posts"}, Top: 10})
		// r.LockWaits:     [{Table: slotted_counters, Waiting: 0} {Table: posts, Waiting: 12, Longest: 340ms}]
		// r.Server:        Innodb_row_lock_waits, Innodb_row_lock_time, Innodb_row_lock_current_waits, Innodb_deadlocks
		//                  (MySQL/MariaDB) or deadlocks (PostgreSQL)
		// r.MostRows, r.LargestTotals: []diagnose.Counter{Ref, Rows, Total}
		// r.Stats:         retries and lock conflicts by kind (slotted.StatsOf(db) alone)

		w, err := diagnose.LockWaits(db, "posts") // the lock probe alone, for sampling
		c, err := diagnose.ServerCounters(db)     // the server's counters alone: read twice and subtract
		_ = r
		_ = err
		_ = w
		_ = c
	}
}
