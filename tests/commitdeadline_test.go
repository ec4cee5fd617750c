package tests

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestDeadlinesThroughCommit: every call that runs a transaction of its own
// reaches COMMIT, and the server freezes (SIGSTOP) for 3 s just before the
// COMMITs are sent. database/sql's Tx.Commit takes no context, and
// go-sql-driver/mysql does not watch COMMIT: before, these calls returned
// when the server woke up. Each must now return its context's error within
// 500 ms of its 1 s deadline. The COMMITs go on without their callers (pgx
// may cancel one on PostgreSQL); running each call again afterwards leaves
// every effect exactly once.
func TestDeadlinesThroughCommit(t *testing.T) {
	testEachFaultDB(t, func(t *testing.T, srv *faultServer) {
		db, hooks := srv.hookedGorm(t, slotted.Config{})
		cacheDB(t, db)
		require.NoError(t, db.AutoMigrate(&Article{}))

		// Before: a once key to remove, slot rows to compact, a topic with
		// replies whose cache drifted, an article to roll up.
		_, err := slotted.AddOnce(db, &Post{ID: 2}, "likes", 4, "k2")
		require.NoError(t, err)
		for range 30 {
			require.NoError(t, slotted.Add(db, &Post{ID: 3}, "views", 2))
		}
		fixTopic, cacheTopic := Topic{Title: "fix"}, Topic{Title: "cache"}
		require.NoError(t, db.Create(&fixTopic).Error)
		require.NoError(t, db.Create(&cacheTopic).Error)
		for range 3 {
			require.NoError(t, db.Create(&Reply{TopicID: &fixTopic.ID, Points: 1}).Error)
		}
		require.NoError(t, slotted.Reset(db, &fixTopic, "replies", 40)) // drift for Fix to repair
		article := Article{Title: "a"}
		require.NoError(t, db.Create(&article).Error)
		require.NoError(t, slotted.Add(db, &article, "likes", 6))

		// One call per freeze: with several, one call's statements may wait
		// for row locks the others hold at the gate (InnoDB locks the record
		// that ends a locking scan, and an uncommitted insert there blocks it).
		calls := []commitCall{
			{"AddOnce", func(db *gorm.DB) error { _, err := slotted.AddOnce(db, &Post{ID: 1}, "likes", 1, "k1"); return err }},
			{"RemoveOnce", func(db *gorm.DB) error { _, err := slotted.RemoveOnce(db, &Post{ID: 2}, "likes", "k2"); return err }},
			{"Compact", func(db *gorm.DB) error { return slotted.Compact(db, &Post{ID: 3}, "views") }},
			{"Reset", func(db *gorm.DB) error { return slotted.Reset(db, &Post{ID: 4}, "likes", 5) }},
			{"RollUp", func(db *gorm.DB) error { return slotted.RollUp(db, &[]Article{{ID: article.ID}}) }},
			{"counter cache, SkipDefaultTransaction", func(db *gorm.DB) error {
				return db.Session(&gorm.Session{SkipDefaultTransaction: true}).Create(&Reply{TopicID: &cacheTopic.ID, Points: 2}).Error
			}},
			{"Fix", func(db *gorm.DB) error {
				_, err := slotted.Fix(db, &Topic{ID: fixTopic.ID})
				return err
			}},
		}
		for _, c := range calls {
			freezeAtCommit(t, srv, db, hooks, []commitCall{c}, time.Second, 3*time.Second)
		}

		// The COMMITs went on without their callers. On MariaDB they land; on
		// PostgreSQL pgx may cancel a COMMIT whose context has ended, so it may
		// not (the callers got their contexts' errors: outcome unknown, as
		// documented). What each call promises is that running it again is safe:
		// after a second run of every call but the child Create, each effect is
		// there exactly once. The child Create is not repeated: its counter cache
		// is checked against the replies table, which holds whether it landed or not.
		for _, c := range calls {
			if c.name == "counter cache, SkipDefaultTransaction" {
				continue
			}
			require.NoError(t, c.run(db), "%s run again", c.name)
		}
		for _, want := range []struct {
			post    Post
			counter string
			n       int64
		}{{Post{ID: 1}, "likes", 1}, {Post{ID: 2}, "likes", 0}, {Post{ID: 3}, "views", 60}, {Post{ID: 4}, "likes", 5}} {
			n, err := slotted.Count(db, &want.post, want.counter)
			require.NoError(t, err)
			assert.EqualValues(t, want.n, n, "post %d %s", want.post.ID, want.counter)
		}
		applied, err := slotted.AddOnce(db, &Post{ID: 1}, "likes", 1, "k1")
		require.NoError(t, err)
		assert.False(t, applied, "AddOnce's key is recorded with its delta: running it a third time applies nothing")
		var rows int64
		require.NoError(t, db.Table(slotted.DefaultTable).Where("record_type = ? AND record_id = ?", "posts.views", "3").Count(&rows).Error)
		assert.EqualValues(t, 1, rows, "Compact folded the counter into one row")
		var got Article
		require.NoError(t, db.First(&got, article.ID).Error)
		assert.EqualValues(t, 6, got.LikesCount, "RollUp wrote the total")
		requireTopicsExact(t, db, fixTopic.ID, cacheTopic.ID)
	})
}

type commitCall struct {
	name string
	run  func(db *gorm.DB) error
}

// freezeAtCommit runs calls at once, each with its own deadline. Their
// COMMITs wait at a gate until every call reached its own; then the server
// freezes for freeze and the COMMITs are sent. Each call must return its
// context's error within 500 ms of its deadline. It returns once the server
// resumed.
func freezeAtCommit(t *testing.T, srv *faultServer, db *gorm.DB, hooks *hookConnector, calls []commitCall, deadline, freeze time.Duration) {
	t.Helper()
	var reached atomic.Int32
	gate := make(chan struct{})
	frozen := make(chan (<-chan struct{}), 1)
	var armed atomic.Bool
	armed.Store(true)
	hooks.onCommit = func() {
		if !armed.Load() {
			return
		}
		if int(reached.Add(1)) == len(calls) {
			frozen <- srv.freeze(t, freeze)
			close(gate)
		}
		select {
		case <-gate:
		case <-time.After(2 * time.Second):
		}
	}
	defer func() { hooks.onCommit = nil }()

	late := make([]time.Duration, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			due, _ := ctx.Deadline()
			errs[i] = c.run(db.WithContext(ctx))
			late[i] = time.Since(due)
		}()
	}
	wg.Wait()
	armed.Store(false)
	for i, c := range calls {
		assert.ErrorIs(t, errs[i], context.DeadlineExceeded, c.name)
		assert.Less(t, late[i], 500*time.Millisecond, "%s returned %v after its deadline", c.name, late[i])
		t.Logf("%s: returned %v after its %v deadline, server frozen at COMMIT for %v: %v", c.name, late[i].Round(time.Millisecond), deadline, freeze, errs[i])
	}
	require.EqualValues(t, len(calls), reached.Load(), "every call reached COMMIT")
	resumed := <-frozen
	select {
	case <-resumed:
		t.Fatal("the server resumed before the calls returned: the freeze did not cover their deadlines")
	default:
	}
	<-resumed
}
