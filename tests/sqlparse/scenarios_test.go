package sqlparse

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
	"github.com/slotted-go/slotted/diagnose"
)

// scenario is one use of the plugin's public API whose SQL is captured and
// parsed.
//
// To cover a new API, add one entry to scenarios below:
//   - name says what is called (it names the subtest and every failure);
//   - setup (optional) prepares rows; its SQL is not captured. Every scenario
//     starts on an empty schema (fresh counter table and model tables), so
//     call seed when you need counters with slot rows;
//   - run makes the calls whose SQL is captured. Fail on any error: a
//     scenario that did not do what it says proves nothing;
//   - vitess is where its statements on the counter table go when the table
//     is sharded by record_id (see vitess_test.go): oneShard when every one
//     of them names a single record_id, someShards when the widest is an IN
//     over several, allShards when one of them scatters. The test checks it
//     against the Vitess planner, so the README's Deployments section stays
//     true; run the test with -v to see the plan of every statement.
//
// A scenario that emits no SQL fails: give it something to do.
type scenario struct {
	name   string
	setup  func(t *testing.T, db *gorm.DB)
	run    func(t *testing.T, db *gorm.DB)
	vitess reach
}

var scenarios = []scenario{
	{name: "Use: first start migrates an empty database", vitess: noCounterRows,
		setup: func(t *testing.T, db *gorm.DB) { must(t, db.Migrator().DropTable(slotted.DefaultTable)) },
		run:   func(t *testing.T, db *gorm.DB) { reopen(t, db, slotted.Config{}) }},
	{name: "Use: start on an existing table", vitess: allShards,
		run: func(t *testing.T, db *gorm.DB) { reopen(t, db, slotted.Config{}) }},
	{name: "Migrate: existing table", vitess: allShards,
		run: func(t *testing.T, db *gorm.DB) { must(t, slotted.Migrate(db)) }},

	{name: "Increment, Decrement, Add", vitess: oneShard, run: func(t *testing.T, db *gorm.DB) {
		post := Post{ID: 1}
		must(t, slotted.Increment(db, &post, "likes"))
		must(t, slotted.Decrement(db, &post, "Likes"))
		must(t, slotted.Add(db, &post, "views", 10))
		must(t, slotted.Add(db, &post, "stars", -3))
		must(t, slotted.Increment(db, &Tag{Name: "go"}, "uses"))
	}},
	{name: "AddRef", vitess: oneShard, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.AddRef(db, slotted.Ref{Type: "123", ID: "456"}, 1))
	}},
	{name: "Count, CountRef", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "1"}, seedLikes)
		_, err := slotted.Count(db, &Tag{Name: "go"}, "uses")
		must(t, err)
		_, err = slotted.CountRef(db, slotted.Ref{Type: "123", ID: "456"})
		must(t, err)
	}},

	{name: "Load: several records, every counter", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		posts := []Post{{ID: 1}, {ID: 2}, {ID: 3}}
		must(t, slotted.Load(db, &posts))
		if posts[2].Likes != seedLikes {
			t.Fatalf("Load: likes %d, want %d", posts[2].Likes, seedLikes)
		}
	}},
	{name: "Load: one record, one counter", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		post := Post{ID: 2}
		must(t, slotted.Load(db, &post, "views"))
	}},
	{name: "Auto-fill: Find, First, Take, Last, Where", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		var posts []Post
		must(t, db.Find(&posts).Error)
		if len(posts) != seedPosts || posts[0].Likes != seedLikes {
			t.Fatalf("Find: %d posts, first has %d likes; want %d posts with %d", len(posts), posts[0].Likes, seedPosts, seedLikes)
		}
		var first, second, last Post
		must(t, db.First(&first).Error)
		must(t, db.Take(&second, 2).Error)
		must(t, db.Last(&last).Error)
		must(t, db.Where("author_id = ?", 1).Find(&posts).Error)
		var tags []Tag
		must(t, db.Find(&tags).Error)
	}},
	{name: "Auto-fill: Preload", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		var authors []Author
		must(t, db.Preload("Posts").Find(&authors).Error)
	}},

	{name: "Compact: a counter with several rows", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.Compact(db, &Post{ID: 1}, "likes"))
		must(t, slotted.Compact(db, &Tag{Name: "go"}, "uses"))
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "1"}, seedLikes)
	}},
	{name: "CompactRef", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.CompactRef(db, slotted.Ref{Type: "posts.views", ID: "2"}))
	}},
	{name: "CompactAll: every counter", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		prog, err := slotted.CompactAll(db)
		must(t, err)
		if prog.Counters == 0 {
			t.Fatal("CompactAll compacted nothing")
		}
	}},
	{name: "CompactAll: RecordType", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		_, err := slotted.CompactAll(db, slotted.CompactOptions{RecordType: "posts.likes"})
		must(t, err)
	}},
	{name: "CompactAll: After", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		_, err := slotted.CompactAll(db, slotted.CompactOptions{After: slotted.Ref{Type: "posts.likes", ID: "3"}})
		must(t, err)
	}},
	{name: "CompactAll: RecordType and After, MinRows, several batches", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		prog, err := slotted.CompactAll(db, slotted.CompactOptions{
			RecordType: "posts.views", After: slotted.Ref{Type: "posts.views", ID: "1"}, MinRows: 1, BatchSize: 2,
		})
		must(t, err)
		if prog.Batches < 2 {
			t.Fatalf("CompactAll ran %d batches, want several", prog.Batches)
		}
	}},

	{name: "Reset: a counter with rows", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.Reset(db, &Post{ID: 1}, "likes", 42))
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "1"}, 42)
	}},
	{name: "Reset: a counter without rows", vitess: oneShard, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.Reset(db, &Post{ID: 9}, "likes", 7))
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "9"}, 7)
	}},
	{name: "Reset: to 0", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.Reset(db, &Post{ID: 2}, "views", 0))
	}},
	{name: "ResetRef", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.ResetRef(db, slotted.Ref{Type: "posts.likes", ID: "3"}, 5))
	}},

	{name: "RollUp: one record", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.RollUp(db, &Article{ID: 1}))
	}},
	{name: "RollUp: several records, one counter", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		articles := []Article{{ID: 1}, {ID: 2}, {ID: 3}}
		must(t, slotted.RollUp(db, &articles, "likes"))
		if articles[0].LikesCount != seedLikes {
			t.Fatalf("RollUp: likes_count %d, want %d", articles[0].LikesCount, seedLikes)
		}
	}},
	{name: "RollUpAll: several batches, then After", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		prog, err := slotted.RollUpAll(db, &Article{}, slotted.RollUpOptions{BatchSize: 2})
		must(t, err)
		if prog.Batches < 2 {
			t.Fatalf("RollUpAll ran %d batches, want several", prog.Batches)
		}
		_, err = slotted.RollUpAll(db, &Article{}, slotted.RollUpOptions{After: uint(2)})
		must(t, err)
	}},
	{name: "Runner: one pass", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		var errs []error
		r := slotted.Runner{Interval: time.Hour, Compact: &slotted.CompactOptions{}, RollUp: []any{&Article{}},
			OnError: func(err error) { errs = append(errs, err) },
			OnPass:  func(slotted.Pass) { cancel() }}
		must(t, r.Run(ctx, db))
		must(t, errors.Join(errs...))
	}},

	{name: "Sweep: orphans of raw-deleted records, several batches", vitess: allShards,
		setup: func(t *testing.T, db *gorm.DB) {
			seed(t, db)
			must(t, db.Exec("DELETE FROM posts WHERE id IN (1, 4)").Error)
			must(t, db.Exec("DELETE FROM tags WHERE name = 'go'").Error)
		},
		run: func(t *testing.T, db *gorm.DB) {
			prog, err := slotted.Sweep(db, &Post{}, slotted.SweepOptions{BatchSize: 2})
			must(t, err)
			if prog.Orphans != 2 {
				t.Fatalf("Sweep found %d orphans, want 2", prog.Orphans)
			}
			_, err = slotted.Sweep(db, &Tag{})
			must(t, err)
		}},

	{name: "Delete: by primary key", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, db.Delete(&Post{ID: 1}).Error)
		must(t, db.Delete(&Tag{Name: "go"}).Error)
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "1"}, 0)
	}},
	{name: "Delete: by primary keys", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, db.Delete(&Post{}, []uint{1, 2}).Error)
	}},
	{name: "Delete: by conditions", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, db.Where("author_id = ?", 1).Delete(&Post{}).Error)
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "2"}, 0)
	}},
	{name: "Delete: a batch of records", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, db.Delete(&[]Post{{ID: 4}, {ID: 5}, {ID: 6}}).Error)
	}},
	{name: "Delete: soft delete keeps counters, Unscoped removes them", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, db.Delete(&Article{ID: 1}).Error)
		must(t, db.Unscoped().Delete(&Article{ID: 2}).Error)
		must(t, db.Unscoped().Where("title = ?", "article 3").Delete(&Article{}).Error)
	}},
	{name: "Delete: without gorm's default transaction", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, db.Session(&gorm.Session{SkipDefaultTransaction: true}).Delete(&Post{ID: 3}).Error)
	}},

	{name: "Transaction: writes, reads and rewrites join the caller's", vitess: someShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, db.Transaction(func(tx *gorm.DB) error {
			post := Post{ID: 1}
			must(t, slotted.Increment(tx, &post, "likes"))
			must(t, slotted.AddRef(tx, slotted.Ref{Type: "123", ID: "456"}, 2))
			_, err := slotted.Count(tx, &post, "likes")
			must(t, err)
			must(t, slotted.Load(tx, &[]Post{{ID: 1}, {ID: 2}}))
			must(t, slotted.Compact(tx, &post, "likes"))
			must(t, slotted.Reset(tx, &post, "views", 3))
			must(t, slotted.RollUp(tx, &Article{ID: 1}))
			return tx.Delete(&Post{ID: 2}).Error
		}))
		tx := db.Begin()
		must(t, tx.Error)
		must(t, slotted.Increment(tx, &Post{ID: 3}, "likes"))
		must(t, tx.Commit().Error)
	}},
	{name: "Transaction: rolled back", vitess: oneShard, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		errRollback := errors.New("roll back")
		err := db.Transaction(func(tx *gorm.DB) error {
			must(t, slotted.Increment(tx, &Post{ID: 1}, "likes"))
			must(t, tx.Delete(&Post{ID: 1}).Error)
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("Transaction: %v", err)
		}
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "1"}, seedLikes)
	}},

	{name: "AddOnce, AddRefOnce, RemoveOnce: retry-safe writes and their undo", vitess: oneShard, run: func(t *testing.T, db *gorm.DB) {
		for i, wantApplied := range []bool{true, false} { // the retry of an applied key adds nothing
			applied, err := slotted.AddOnce(db, &Post{ID: 1}, "likes", 1, "user:7")
			must(t, err)
			if applied != wantApplied {
				t.Fatalf("AddOnce call %d applied = %v", i, applied)
			}
		}
		_, err := slotted.AddRefOnce(db, slotted.Ref{Type: "posts.likes", ID: "2"}, 1, "user:7", slotted.OnceOptions{ExpireAfter: time.Hour})
		must(t, err)
		removed, err := slotted.RemoveOnce(db, &Post{ID: 1}, "likes", "user:7")
		must(t, err)
		if !removed {
			t.Fatal("RemoveOnce removed nothing")
		}
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "1"}, 0)
	}},

	{name: "AddEach, AddMany: bulk multi-row upserts", vitess: someShards, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.AddEach(db, &Post{ID: 1}, map[string]int64{"likes": 1, "views": 2}))
		posts := []Post{{ID: 1}, {ID: 2}, {ID: 3}}
		must(t, slotted.AddMany(db, &posts, "likes", 1))
		want(t, db, slotted.Ref{Type: "posts.likes", ID: "1"}, 2)
	}},
	{name: "AddWhere: INSERT ... SELECT over a query's records", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		must(t, slotted.AddWhere(db.Model(&Post{}).Where("author_id = ?", 1), "views", 1))
	}},

	// Diagnostics live in the diagnose subpackage.
	{name: "Diagnose: defaults", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		d, err := diagnose.Run(db, diagnose.Options{})
		must(t, err)
		if len(d.MostRows) == 0 {
			t.Fatal("Diagnose listed no counters")
		}
	}},
	{name: "Diagnose: ParentTables, RecordType, Top", vitess: allShards, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		_, err := diagnose.Run(db, diagnose.Options{ParentTables: []string{"posts"}, RecordType: "posts.likes", Top: 3})
		must(t, err)
	}},
	{name: "Diagnose: SkipHottest", vitess: noCounterRows, setup: seed, run: func(t *testing.T, db *gorm.DB) {
		_, err := diagnose.Run(db, diagnose.Options{SkipHottest: true})
		must(t, err)
	}},
}

// The fixture seed writes: every post, article and tag has counters with
// several slot rows (seedLikes increments over up to 100 slots).
const (
	seedPosts = 6
	seedLikes = 8
)

func seed(t *testing.T, db *gorm.DB) {
	t.Helper()
	must(t, db.Create(&[]Author{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}).Error)
	for id := uint(1); id <= seedPosts; id++ {
		post := Post{ID: id, AuthorID: 1 + (id-1)/3, Title: "post"}
		must(t, db.Create(&post).Error)
		for range seedLikes {
			must(t, slotted.Increment(db, &post, "likes"))
			must(t, slotted.Increment(db, &post, "views"))
		}
		must(t, slotted.Add(db, &post, "stars", 2))
	}
	for id := uint(1); id <= 4; id++ {
		article := Article{ID: id, Title: "article " + string(rune('0'+id))}
		must(t, db.Create(&article).Error)
		for range seedLikes {
			must(t, slotted.Increment(db, &article, "likes"))
		}
		must(t, slotted.Add(db, &article, "shares", 3))
	}
	for _, name := range []string{"go", "sql"} {
		tag := Tag{Name: name}
		must(t, db.Create(&tag).Error)
		must(t, slotted.Add(db, &tag, "uses", 4))
		must(t, slotted.Add(db, &tag, "uses", 1))
	}
	must(t, slotted.AddRef(db, slotted.Ref{Type: "123", ID: "456"}, 9))
}

// want checks a counter's total.
func want(t *testing.T, db *gorm.DB, ref slotted.Ref, n int64) {
	t.Helper()
	got, err := slotted.CountRef(db, ref)
	must(t, err)
	if got != n {
		t.Fatalf("%+v: total %d, want %d", ref, got, n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
