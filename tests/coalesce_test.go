package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/slotted-go/slotted"
)

// The coalescer's tests make batches deterministic instead of hoping for
// contention: a gate (a gorm Raw callback) holds the plugin's first upsert
// while the test queues callers, and the queue is read from Stats.Waiting.

var errInjected = errors.New("injected statement failure")

// oneInFlight makes the plugin's statement held by a gate the only one in flight: every write after it queues.
var oneInFlight = slotted.Config{MaxInFlight: 1}

// oneInFlightUnmarked is oneInFlight without outcome markers, for the tests that count the rows and
// statements a batch becomes: a marker takes one row of every statement shape (docs/outcomes.md).
var oneInFlightUnmarked = slotted.Config{MaxInFlight: 1, DisableOutcomeMarkers: true}

// gate sees every upsert the plugin sends (through gorm's Raw chain, before
// gorm:raw runs it) and lets the test hold or fail the n-th one.
type gate struct {
	n     atomic.Int32
	mu    sync.Mutex
	stmts []gated
	on    func(n int32, tx *gorm.DB) // runs inside the statement's callback chain
}

type gated struct {
	sql  string
	vars []any
}

func installGate(t *testing.T, db *gorm.DB, on func(n int32, tx *gorm.DB)) *gate {
	t.Helper()
	g := &gate{on: on}
	require.NoError(t, db.Callback().Raw().Before("gorm:raw").Register("test:gate", func(tx *gorm.DB) {
		sql := tx.Statement.SQL.String()
		if !strings.HasPrefix(sql, "INSERT INTO") || !strings.Contains(sql, slotted.DefaultTable) {
			return
		}
		n := g.n.Add(1)
		g.mu.Lock()
		g.stmts = append(g.stmts, gated{sql, slices.Clone(tx.Statement.Vars)})
		g.mu.Unlock()
		if g.on != nil {
			g.on(n, tx)
		}
	}))
	t.Cleanup(func() { _ = db.Callback().Raw().Remove("test:gate") })
	return g
}

func (g *gate) statement(n int) gated {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stmts[n-1]
}

func stats(t *testing.T, db *gorm.DB) slotted.Stats {
	t.Helper()
	s, err := slotted.StatsOf(db)
	require.NoError(t, err)
	return s
}

// waitQueued blocks until n writes are queued behind the statement in flight.
// No deadline of its own: the go test timeout bounds it.
func waitQueued(t *testing.T, db *gorm.DB, n int64) {
	t.Helper()
	for stats(t, db).Waiting != n {
		time.Sleep(time.Millisecond)
	}
}

// held returns a gate callback that blocks statement number which until release is closed,
// closing started when it gets there.
func held(which int32) (on func(int32, *gorm.DB), started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	return func(n int32, _ *gorm.DB) {
		if n == which {
			close(started)
			<-release
		}
	}, started, release
}

// queue starts one goroutine per write and returns a function that waits for their errors.
func queue(writes []func() error) func() []error {
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w() }()
	}
	return func() []error { wg.Wait(); return errs }
}

// hotAndTags: 16 increments of one post's likes and 32 of 15 tags' uses: 48 writes, 16 counters.
func hotAndTags(db func(i int) *gorm.DB, post Post) []func() error {
	writes := make([]func() error, 48)
	for i := range writes {
		if i < 16 {
			writes[i] = func() error { p := Post{ID: post.ID}; return slotted.Increment(db(i), &p, "likes") }
		} else {
			writes[i] = func() error {
				tag := Tag{Name: fmt.Sprintf("t%02d", (i-16)%15)}
				return slotted.Increment(db(i), &tag, "uses")
			}
		}
	}
	return writes
}

func tagUses(t *testing.T, db *gorm.DB, n int) []int {
	t.Helper()
	tags := make([]Tag, n)
	for i := range tags {
		tags[i].Name = fmt.Sprintf("t%02d", i)
	}
	require.NoError(t, slotted.Load(db, tags))
	uses := make([]int, n)
	for i, tag := range tags {
		uses[i] = tag.Uses
	}
	return uses
}

// TestCoalescedExactTotals: 64 writers on a hot record (100 and 4 slots), on brand-new one-slot records,
// and on 240 refs; every write goes through the coalescer and every total is exact.
func TestCoalescedExactTotals(t *testing.T) { testEachDB(t, coalescedExactTotals) }

// TestCoalescedExactTotalsFourInFlight: the same with four statements in flight at once.
func TestCoalescedExactTotalsFourInFlight(t *testing.T) {
	testEachDB(t, coalescedExactTotals, slotted.Config{MaxInFlight: 4})
}

func coalescedExactTotals(t *testing.T, db *gorm.DB) {
	const workers, rounds, fresh, refs = 64, 30, 20, 240
	post := Post{Title: "hot"}
	require.NoError(t, db.Create(&post).Error)
	before := stats(t, db)
	errs := run(workers, func(w int) error {
		mine := Post{ID: post.ID}
		for i := 0; i < rounds; i++ {
			delta := int64(1 + w%3)
			if i%10 == 9 {
				delta = -delta
			}
			if err := slotted.Add(db, &mine, "likes", delta); err != nil {
				return err
			}
			if err := slotted.Increment(db, &mine, "views"); err != nil {
				return err
			}
			tag := Tag{Name: fmt.Sprintf("fresh-%02d", rand.IntN(fresh))}
			if err := slotted.Increment(db, &tag, "uses"); err != nil {
				return err
			}
			if err := slotted.AddRef(db, slotted.Ref{Type: "coalesced", ID: fmt.Sprint((w*rounds + i) % refs)}, 2); err != nil {
				return err
			}
		}
		return nil
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	var wantLikes int64
	for w := 0; w < workers; w++ {
		wantLikes += int64(1+w%3) * (rounds - 2*(rounds/10))
	}
	n, err := slotted.Count(db, &post, "likes")
	require.NoError(t, err)
	assert.Equal(t, wantLikes, n)
	n, err = slotted.Count(db, &post, "views")
	require.NoError(t, err)
	assert.EqualValues(t, workers*rounds, n)

	var uses int64
	require.NoError(t, slotted.Table(db).Where("record_type = ?", "tags.uses").Select("SUM(count)").Scan(&uses).Error)
	assert.EqualValues(t, workers*rounds, uses)
	var rows int64
	require.NoError(t, slotted.Table(db).Where("record_type = ?", "tags.uses").Count(&rows).Error)
	assert.LessOrEqual(t, rows, int64(fresh), "slots:1 holds even when batched")
	require.NoError(t, slotted.Table(db).Where("record_type = ?", "posts.views").Count(&rows).Error)
	assert.LessOrEqual(t, rows, int64(4), "slots:4 holds even when batched")
	for r := 0; r < refs; r++ {
		n, err := slotted.CountRef(db, slotted.Ref{Type: "coalesced", ID: fmt.Sprint(r)})
		require.NoError(t, err)
		require.EqualValues(t, 2*workers*rounds/refs, n, "ref %d", r)
	}

	after := stats(t, db)
	assert.EqualValues(t, 4*workers*rounds, after.BatchedWrites-before.BatchedWrites, "every write went through the coalescer")
	assert.Zero(t, after.Waiting)
	var perShape uint64
	for _, n := range after.BatchRows {
		perShape += n
	}
	assert.Equal(t, after.Batches, perShape)
}

// TestCoalescedBatch queues 48 writes on 16 counters behind a held statement: they are written by one
// 16-row statement, rows in key order, each counter once, with the dialect's per-row delta.
func TestCoalescedBatch(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "batch"}
		require.NoError(t, db.Create(&post).Error)
		on, started, release := held(1)
		g := installGate(t, db, on)
		before := stats(t, db)

		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		rest := queue(hotAndTags(func(int) *gorm.DB { return db }, post))
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for _, err := range rest() {
			require.NoError(t, err)
		}

		require.EqualValues(t, 2, g.n.Load(), "the held statement, then one statement for all 48 writes")
		batch := g.statement(2)
		require.Len(t, batch.vars, 16*4, "16 counters, 4 values each")
		assert.True(t, strings.HasSuffix(batch.sql, upsertUpdate(db, inserted[dialect(db)])), "each row's own delta, checked on SQLite: %s", batch.sql)
		var keys []string
		for r := 0; r < 16; r++ {
			keys = append(keys, fmt.Sprint(batch.vars[4*r])+"\x00"+fmt.Sprint(batch.vars[4*r+1]))
		}
		assert.True(t, slices.IsSorted(keys), "rows in key order: %q", keys)
		assert.Len(t, slices.Compact(slices.Clone(keys)), 16, "each counter once")

		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 17, n)
		uses := tagUses(t, db, 15)
		for i, u := range uses {
			want := 2
			if i < 32-2*15 {
				want = 3
			}
			assert.Equal(t, want, u, "tag %d", i)
		}
		after := stats(t, db)
		assert.EqualValues(t, 2, after.Batches-before.Batches)
		assert.EqualValues(t, 49, after.BatchedWrites-before.BatchedWrites)
		assert.EqualValues(t, 1, after.BatchRows[16]-before.BatchRows[16])
	}, oneInFlightUnmarked)
}

// TestCoalescedBatchRounding: with MaxBatch 12, 48 queued writes on 48 counters go out as six 8-row
// statements (a shape), none padded, none repeating a counter.
func TestCoalescedBatchRounding(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		on, started, release := held(1)
		g := installGate(t, db, on)
		first := queue([]func() error{func() error { return slotted.AddRef(db, slotted.Ref{Type: "round", ID: "first"}, 1) }})
		<-started
		writes := make([]func() error, 48)
		for i := range writes {
			writes[i] = func() error {
				return slotted.AddRef(db, slotted.Ref{Type: "round", ID: fmt.Sprintf("r%02d", i)}, int64(i+1))
			}
		}
		rest := queue(writes)
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for _, err := range rest() {
			require.NoError(t, err)
		}
		require.EqualValues(t, 7, g.n.Load())
		for n := 2; n <= 7; n++ {
			assert.Len(t, g.statement(n).vars, 8*4)
		}
		for i := range writes {
			n, err := slotted.CountRef(db, slotted.Ref{Type: "round", ID: fmt.Sprintf("r%02d", i)})
			require.NoError(t, err)
			assert.EqualValues(t, i+1, n)
		}
		assert.EqualValues(t, 6, stats(t, db).BatchRows[8])
	}, slotted.Config{MaxBatch: 12, MaxInFlight: 1, DisableOutcomeMarkers: true})
}

// TestCoalescedFailure fails the statement that carries 48 queued writes: every one of them gets the
// error and none of them is written; the writes after it succeed.
func TestCoalescedFailure(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "fail"}
		require.NoError(t, db.Create(&post).Error)
		hold, started, release := held(1)
		installGate(t, db, func(n int32, tx *gorm.DB) {
			hold(n, tx)
			if n == 2 {
				tx.AddError(errInjected) // gorm:raw then skips the statement; the plugin returns the error
			}
		})
		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		rest := queue(hotAndTags(func(int) *gorm.DB { return db }, post))
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		for i, err := range rest() {
			require.ErrorIs(t, err, errInjected, "write %d", i)
		}
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "only the first, separate statement was written")
		for i, u := range tagUses(t, db, 15) {
			assert.Zero(t, u, "tag %d", i)
		}

		for _, err := range queue(hotAndTags(func(int) *gorm.DB { return db }, post))() {
			require.NoError(t, err)
		}
		n, err = slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 17, n)
	}, oneInFlightUnmarked)
}

// TestCoalescedCancellation: a queued write whose context ends leaves with the context error and nothing
// written; one whose delta is already in a statement leaves with the context error too, while the statement
// is still held, and its delta lands with the statement.
func TestCoalescedCancellation(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "cancel"}
		require.NoError(t, db.Create(&post).Error)
		hold1, started1, release1 := held(1)
		hold2, started2, release2 := held(2)
		installGate(t, db, func(n int32, tx *gorm.DB) { hold1(n, tx); hold2(n, tx) })

		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started1
		// Queued behind statement 1: the odd writes' contexts end before they are taken.
		ctxs := make([]context.CancelFunc, 48)
		queued := queue(hotAndTags(func(i int) *gorm.DB {
			ctx, cancel := context.WithCancel(context.Background())
			ctxs[i] = cancel
			return db.WithContext(ctx)
		}, post))
		waitQueued(t, db, 48)
		for i := 1; i < 48; i += 2 {
			ctxs[i]()
		}
		waitQueued(t, db, 24)
		close(release1)
		// Statement 2 now holds the 24 even writes; end their contexts while it is in flight.
		<-started2
		for i := 0; i < 48; i += 2 {
			ctxs[i]()
		}
		// Every caller leaves at its own context's end, the taken ones too,
		// while statement 2 is still held: their deltas are in it and land.
		done := make(chan []error, 1)
		go func() { done <- queued() }()
		var errs []error
		select {
		case errs = <-done:
		case <-time.After(10 * time.Second):
			close(release2)
			t.Fatal("callers whose writes are in the held statement did not leave when their contexts ended")
		}
		for i, err := range errs {
			require.ErrorIs(t, err, context.Canceled, "write %d", i)
		}
		close(release2)
		require.NoError(t, first()[0])
		// Statement 2 carries the likes and the tags together: once the likes show, all of it has committed.
		require.Eventually(t, func() bool {
			n, err := slotted.Count(db, &post, "likes")
			return err == nil && n >= 1+8 // the first write and the 8 even hot writes, taken before their contexts ended
		}, 10*time.Second, 5*time.Millisecond)
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 1+8, n, "and nothing of the writes that left the queue")
		want := make([]int, 15)
		for i := 16; i < 48; i += 2 {
			want[(i-16)%15]++
		}
		assert.Equal(t, want, tagUses(t, db, 15))
		assert.Zero(t, stats(t, db).Waiting)
	}, oneInFlightUnmarked)
}

// TestCoalescingBypassesTransactions: while a coalesced statement is held, writes inside transactions
// still run (they never queue behind it) and are not counted as batched.
func TestCoalescingBypassesTransactions(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		// Each writer's transaction holds a connection: cap them below the
		// server's max_connections (MariaDB's default is 151).
		sqlDB, err := db.DB()
		require.NoError(t, err)
		sqlDB.SetMaxOpenConns(24)
		post := Post{Title: "tx"}
		require.NoError(t, db.Create(&post).Error)
		on, started, release := held(1)
		installGate(t, db, on)
		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		before := stats(t, db)
		errs := run(writers, func(w int) error {
			return db.Transaction(func(tx *gorm.DB) error {
				p := Post{ID: post.ID}
				return slotted.Add(tx, &p, "views", 1)
			})
		})
		for _, err := range errs {
			if err != nil && !retryable(err) {
				require.NoError(t, err)
			}
		}
		after := stats(t, db)
		assert.Equal(t, before.BatchedWrites, after.BatchedWrites, "transactions do not go through the coalescer")
		assert.Zero(t, after.Waiting)
		close(release)
		require.NoError(t, first()[0])
		committed := 0
		for _, err := range errs {
			if err == nil {
				committed++
			}
		}
		n, err := slotted.Count(db, &post, "views")
		require.NoError(t, err)
		assert.EqualValues(t, committed, n)
		assert.Positive(t, committed)
	}, oneInFlight)
}

// TestCoalescingDisabled: with DisableCoalescing every write is its own statement and nothing is batched.
func TestCoalescingDisabled(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "off"}
		require.NoError(t, db.Create(&post).Error)
		g := installGate(t, db, nil)
		errs := run(writers, func(w int) error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") })
		for _, err := range errs {
			require.NoError(t, err)
		}
		assert.EqualValues(t, writers, g.n.Load(), "one statement per write")
		s := stats(t, db)
		assert.Zero(t, s.Batches)
		assert.Zero(t, s.BatchedWrites)
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, writers, n)
	}, slotted.Config{DisableCoalescing: true})
}

// TestCoalescingKeepsRouting: writers with different dbresolver routing never share a statement. 48
// writers go to the default source, to dbresolver.Write, and to a named resolver with a database of its
// own; each database ends with exactly its writes. SQLite only, like TestDBResolver.
func TestCoalescingKeepsRouting(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqliteOpen(sqliteDSN(filepath.Join(dir, name), 10000, true))
	}
	for _, name := range []string{"replica.db", "other.db"} {
		side, err := gorm.Open(open(name), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		require.NoError(t, side.Use(slotted.New(slotted.Config{})))
	}
	db, err := gorm.Open(open("source.db"), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.Use(slotted.New(slotted.Config{})))
	require.NoError(t, db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{open("replica.db")}}).
		Register(dbresolver.Config{Sources: []gorm.Dialector{open("other.db")}}, "other")))

	ref := slotted.Ref{Type: "routed", ID: "1"}
	errs := run(writers, func(w int) error {
		for i := 0; i < 10; i++ {
			var tx *gorm.DB
			switch (w + i) % 3 {
			case 0:
				tx = db
			case 1:
				tx = db.Clauses(dbresolver.Write)
			default:
				tx = db.Clauses(dbresolver.Use("other"))
			}
			if err := slotted.AddRef(tx, ref, int64(1+(w+i)%3*100)); err != nil {
				return err
			}
		}
		return nil
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	var want [3]int64
	for w := 0; w < writers; w++ {
		for i := 0; i < 10; i++ {
			want[(w+i)%3] += int64(1 + (w+i)%3*100)
		}
	}
	for _, c := range []struct {
		db   *gorm.DB
		want int64
	}{{db.Clauses(dbresolver.Write), want[0] + want[1]}, {db, 0}, {db.Clauses(dbresolver.Use("other"), dbresolver.Write), want[2]}} {
		n, err := slotted.CountRef(c.db, ref)
		require.NoError(t, err)
		assert.Equal(t, c.want, n)
	}
}

// TestCoalescedInFlightBound: with MaxInFlight 2, two held statements are the bound: the next 48 writes
// queue, and are written by one or two batches when the held ones end.
func TestCoalescedInFlightBound(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "bound"}
		require.NoError(t, db.Create(&post).Error)
		hold1, started1, release1 := held(1)
		hold2, started2, release2 := held(2)
		g := installGate(t, db, func(n int32, tx *gorm.DB) { hold1(n, tx); hold2(n, tx) })
		incr := func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }
		leaders := queue([]func() error{incr, incr})
		<-started1
		<-started2
		rest := queue(hotAndTags(func(int) *gorm.DB { return db }, post))
		waitQueued(t, db, 48)
		close(release1)
		close(release2)
		for _, err := range append(leaders(), rest()...) {
			require.NoError(t, err)
		}
		assert.Contains(t, []int32{3, 4}, g.n.Load(), "the two held statements, then the queue in one or two batches")
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 18, n)
		assert.Equal(t, []int{3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, tagUses(t, db, 15))
	}, slotted.Config{MaxInFlight: 2, DisableOutcomeMarkers: true}) // counts statements: a marker makes 16 counters 15 + 1 (oneInFlightUnmarked)
}

// TestCoalescedPanic: a callback panicking in the batch statement panics in the leader's goroutine only; the
// other callers in the statement get an error, and the coalescer keeps working (nobody waits forever).
func TestCoalescedPanic(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		post := Post{Title: "panic"}
		require.NoError(t, db.Create(&post).Error)
		hold, started, release := held(1)
		installGate(t, db, func(n int32, tx *gorm.DB) {
			hold(n, tx)
			if n == 2 || n == 3 {
				panic("callback panic")
			}
		})
		guarded := func(fn func() error) func() error {
			return func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panicked: %v", r)
					}
				}()
				return fn()
			}
		}
		first := queue([]func() error{func() error { p := Post{ID: post.ID}; return slotted.Increment(db, &p, "likes") }})
		<-started
		writes := hotAndTags(func(int) *gorm.DB { return db }, post)
		for i := range writes {
			writes[i] = guarded(writes[i])
		}
		rest := queue(writes)
		waitQueued(t, db, 48)
		close(release)
		require.NoError(t, first()[0])
		panicked, failed := 0, 0
		for _, err := range rest() {
			require.Error(t, err)
			if strings.HasPrefix(err.Error(), "panicked: ") {
				panicked++
			} else {
				assert.Contains(t, err.Error(), "panicked while the coalesced statement ran")
				failed++
			}
		}
		assert.Equal(t, 1, panicked, "the leader's goroutine")
		assert.Equal(t, 47, failed)

		// Statement 3 panics uncontended; statement 4 onwards works.
		p := Post{ID: post.ID}
		require.Error(t, guarded(func() error { return slotted.Increment(db, &p, "likes") })())
		for _, err := range queue(hotAndTags(func(int) *gorm.DB { return db }, post))() {
			require.NoError(t, err)
		}
		assert.Zero(t, stats(t, db).Waiting)
	}, oneInFlightUnmarked)
}

// flipCtx is a context whose deadline passes right after its first look:
// Err is nil once, then DeadlineExceeded (Done never closes).
type flipCtx struct {
	context.Context
	looks atomic.Int32
}

func (c *flipCtx) Err() error {
	if c.looks.Add(1) > 1 {
		return context.DeadlineExceeded
	}
	return nil
}

// TestCoalescedDeadlineDuringTake: a queued caller whose deadline passes while
// the leader takes the batch is either in the statement or out of it, never
// half in (an indexed counter row left empty panicked the leader with
// rand.IntN(0) and failed every other caller).
func TestCoalescedDeadlineDuringTake(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		on, started, release := held(1)
		installGate(t, db, on)
		first := queue([]func() error{func() error { return slotted.AddRef(db, slotted.Ref{Type: "take", ID: "first"}, 1) }})
		<-started
		leader := make(chan any, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					leader <- fmt.Sprint("panic: ", r)
				}
			}()
			leader <- slotted.AddRef(db, slotted.Ref{Type: "take", ID: "a"}, 1)
		}()
		waitQueued(t, db, 1)
		b := queue([]func() error{func() error { return slotted.AddRef(db, slotted.Ref{Type: "take", ID: "b"}, 1) }})
		waitQueued(t, db, 2)
		fc := &flipCtx{Context: context.Background()}
		f := queue([]func() error{func() error { return slotted.AddRef(db.WithContext(fc), slotted.Ref{Type: "take", ID: "f"}, 1) }})
		waitQueued(t, db, 3)
		close(release)
		require.NoError(t, first()[0])
		require.Nil(t, <-leader, "the leader")
		require.NoError(t, b()[0])
		require.NoError(t, f()[0], "taken with its one look at the context")
		for _, id := range []string{"first", "a", "b", "f"} {
			n, err := slotted.CountRef(db, slotted.Ref{Type: "take", ID: id})
			require.NoError(t, err)
			assert.EqualValues(t, 1, n, id)
		}
	}, oneInFlight)
}

// TestCoalescedGoexit: a callback that ends the statement's goroutine with
// runtime.Goexit (t.FailNow in a test callback) fails the batch like a
// panic: the leader panics with a message that says so, the others get the
// "callback panicked" error, and the coalescer keeps working.
func TestCoalescedGoexit(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		on, started, release := held(1)
		installGate(t, db, func(n int32, tx *gorm.DB) {
			on(n, tx)
			if n == 2 {
				runtime.Goexit()
			}
		})
		first := queue([]func() error{func() error { return slotted.AddRef(db, slotted.Ref{Type: "exit", ID: "first"}, 1) }})
		<-started
		writes := make([]func() error, 8)
		for i := range writes {
			writes[i] = func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panicked: %v", r)
					}
				}()
				return slotted.AddRef(db, slotted.Ref{Type: "exit", ID: strconv.Itoa(i)}, 1)
			}
		}
		rest := queue(writes)
		waitQueued(t, db, 8)
		close(release)
		require.NoError(t, first()[0])
		panicked := 0
		for _, err := range rest() {
			require.Error(t, err)
			if strings.HasPrefix(err.Error(), "panicked: ") {
				panicked++
				assert.Contains(t, err.Error(), "runtime.Goexit")
			} else {
				assert.Contains(t, err.Error(), "panicked while the coalesced statement ran")
			}
		}
		assert.Equal(t, 1, panicked, "the leader")
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "exit", ID: "after"}, 1))
		assert.Zero(t, stats(t, db).Waiting)
	}, oneInFlightUnmarked)
}
