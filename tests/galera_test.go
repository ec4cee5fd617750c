package tests

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Galera suite: three MariaDB nodes, every node taking writes (scripts/galera.sh).

func TestGaleraDetectedRetryDefaults(t *testing.T) {
	nodes := galeraCluster(t, slotted.Config{})
	cfg := nodes[0].Config.Plugins["slotted"].(*slotted.Plugin).Config()
	assert.Equal(t, 10, cfg.MaxRetries)
	assert.Equal(t, 5*time.Millisecond, cfg.MinRetryBackoff)
	assert.Equal(t, 500*time.Millisecond, cfg.MaxRetryBackoff)

	own := galeraNode(t, galeraDSNs(t)[1], slotted.Config{MaxRetries: 3, MinRetryBackoff: time.Second})
	cfg = own.Config.Plugins["slotted"].(*slotted.Plugin).Config()
	assert.Equal(t, 3, cfg.MaxRetries, "explicit settings win")
	assert.Equal(t, time.Second, cfg.MinRetryBackoff)
	assert.Equal(t, time.Second, cfg.MaxRetryBackoff, "the ceiling is at least the floor")
}

// TestGaleraIncrementsExactOnEveryNode: 48 writers, 16 on each node, on a
// 100-slot and a 1-slot counter (every write to the latter conflicts with
// the other nodes' at certification). Every increment that returned nil is
// counted exactly once on every node; every one that failed is a classified
// conflict and counted nowhere.
func TestGaleraIncrementsExactOnEveryNode(t *testing.T) {
	nodes := galeraCluster(t, slotted.Config{CausalReads: true})
	post := Post{Title: "hot"}
	tag := Tag{Name: "hot"}
	require.NoError(t, nodes[0].Create(&post).Error)
	require.NoError(t, nodes[0].Create(&tag).Error)

	const perNode, each = 16, 30
	var likes, uses, failed atomic.Int64
	var wg sync.WaitGroup
	for _, db := range nodes {
		for w := range perNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					var err error
					if (w+i)%2 == 0 {
						p := Post{ID: post.ID}
						if err = slotted.Increment(db, &p, "likes"); err == nil {
							likes.Add(1)
						}
					} else {
						tg := Tag{Name: tag.Name}
						if err = slotted.Increment(db, &tg, "uses"); err == nil {
							uses.Add(1)
						}
					}
					if err != nil {
						failed.Add(1)
						assert.Equal(t, slotted.Deadlock, slotted.ConflictOf(err), "only certification conflicts surface: %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	total := int64(len(nodes) * perNode * each)
	t.Logf("%d increments, %d failed after the retries (%.1f%%)", total, failed.Load(), 100*float64(failed.Load())/float64(total))
	assert.Equal(t, total, likes.Load()+uses.Load()+failed.Load())
	assert.Less(t, failed.Load(), total/10, "the Galera retry defaults carry most conflicts")

	for i, db := range nodes {
		n, err := slotted.Count(db, &Post{ID: post.ID}, "likes")
		require.NoError(t, err)
		assert.Equal(t, likes.Load(), n, "likes on node %d", i+1)
		n, err = slotted.Count(db, &Tag{Name: tag.Name}, "uses")
		require.NoError(t, err)
		assert.Equal(t, uses.Load(), n, "uses on node %d", i+1)
		var got Post
		require.NoError(t, db.First(&got, post.ID).Error)
		assert.Equal(t, likes.Load(), got.Likes, "auto-fill on node %d", i+1)
	}
}

// TestGaleraCausalReads pauses node 2's applier, so node 2 deterministically
// lags: a plain Count there misses an increment acknowledged on node 1, and
// one with CausalReads waits for the node to catch up (here: until the pause
// ends) and sees it. Auto-fill likewise.
func TestGaleraCausalReads(t *testing.T) {
	nodes := galeraCluster(t, slotted.Config{})
	dsns := galeraDSNs(t)
	causal := galeraNode(t, dsns[1], slotted.Config{CausalReads: true})
	post := Post{Title: "causal"}
	require.NoError(t, nodes[0].Create(&post).Error)
	require.NoError(t, slotted.Add(nodes[0], &Post{ID: post.ID}, "likes", 5))
	require.EqualValues(t, 5, causalCount(t, nodes[1], refOf(t, nodes[0], post)))

	resume := pausedNode(t, dsns[1])
	require.NoError(t, slotted.Add(nodes[0], &Post{ID: post.ID}, "likes", 2), "node 1 goes on while node 2 is paused")
	n, err := slotted.Count(nodes[1], &Post{ID: post.ID}, "likes")
	require.NoError(t, err)
	assert.EqualValues(t, 5, n, "without CausalReads node 2 reads what it has applied")

	type result struct {
		count, filled int64
		err           error
	}
	got := make(chan result, 1)
	go func() {
		var r result
		r.count, r.err = slotted.Count(causal, &Post{ID: post.ID}, "likes")
		var p Post
		if r.err == nil {
			r.err = causal.First(&p, post.ID).Error
		}
		r.filled = p.Likes
		got <- r
	}()
	select {
	case r := <-got:
		t.Fatalf("a causal read returned while its node could not catch up: %+v", r)
	case <-time.After(300 * time.Millisecond): // not an assertion on speed: the read must not return at all yet
	}
	resume()
	r := <-got
	require.NoError(t, r.err)
	assert.EqualValues(t, 7, r.count, "Count waited for the increment acknowledged on node 1")
	assert.EqualValues(t, 7, r.filled, "and so did auto-fill")
}

// TestGaleraResetAcrossNodes: an increment acknowledged on node 1 before a
// Reset starts on node 2 is never kept, and a RollUp on node 2 right after
// increments on node 1 writes the total including them. Without the causal
// wait node 2 often has not applied the increment's new slot row yet, and
// Reset leaves it alone (17 of 300 rounds in the study).
func TestGaleraResetAcrossNodes(t *testing.T) {
	nodes := galeraCluster(t, slotted.Config{})
	const rounds = 150
	var kept, stale int
	for i := range rounds {
		ref := slotted.Ref{Type: "galera.reset", ID: fmt.Sprint(i)}
		require.NoError(t, slotted.AddRef(nodes[0], ref, 3))
		require.NoError(t, slotted.ResetRef(nodes[1], ref, 10))
		for _, db := range nodes {
			if n := causalCount(t, db, ref); n != 10 {
				kept++
				t.Errorf("round %d: %d after Reset(10) on node 2 of a counter incremented on node 1", i, n)
				break
			}
		}

		a := Article{Title: fmt.Sprint(i)}
		require.NoError(t, nodes[0].Create(&a).Error)
		require.NoError(t, slotted.Add(nodes[0], &Article{ID: a.ID}, "likes", 4))
		require.NoError(t, slotted.RollUp(nodes[1], &Article{ID: a.ID}))
		var col int64
		require.NoError(t, nodes[2].Raw("SET STATEMENT wsrep_sync_wait=1 FOR SELECT likes_count FROM articles WHERE id = ?", a.ID).Row().Scan(&col))
		if col != 4 {
			stale++
			t.Errorf("round %d: RollUp on node 2 wrote %d, node 1 had acknowledged 4", i, col)
		}
	}
	assert.Zero(t, kept, "increments kept by a later Reset on another node")
	assert.Zero(t, stale, "stale roll-ups")
}

// TestGaleraCompactAllAcrossNodes: writers on nodes 1 and 3 hammer one hot
// counter while CompactAll runs on node 2 over it and 30 cold counters after
// it in key order. The hot counter may keep failing certification; the cold
// ones are compacted anyway, and every total stays exact on every node.
func TestGaleraCompactAllAcrossNodes(t *testing.T) {
	nodes := galeraCluster(t, slotted.Config{})
	const typ = "galera.compact"
	hot := slotted.Ref{Type: typ, ID: "0"}
	var cold []slotted.Ref
	for i := range 30 {
		cold = append(cold, slotted.Ref{Type: typ, ID: fmt.Sprintf("c%02d", i)})
	}
	for _, ref := range append([]slotted.Ref{hot}, cold...) {
		for slot := range 5 {
			require.NoError(t, nodes[0].Create(&slotted.SlottedCounter{RecordType: slotted.Key(ref.Type),
				RecordID: slotted.Key(ref.ID), Slot: int32(slot), Count: 1}).Error)
		}
	}

	stop := make(chan struct{})
	var added atomic.Int64
	var wg sync.WaitGroup
	for _, db := range []*gorm.DB{nodes[0], nodes[2]} {
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 400; i++ {
					select {
					case <-stop:
						return
					default:
					}
					err := slotted.AddRef(db, hot, 1)
					if err == nil {
						added.Add(1)
					} else {
						assert.Equal(t, slotted.Deadlock, slotted.ConflictOf(err), "%v", err)
					}
				}
			}()
		}
	}
	var skipped, runs int
	for range 4 {
		prog, err := slotted.CompactAll(nodes[1], slotted.CompactOptions{RecordType: typ})
		runs++
		skipped += len(prog.Skipped)
		if err != nil {
			assert.NotEqual(t, slotted.NoConflict, slotted.ConflictOf(err), "only skips are reported: %v", err)
			assert.NotEmpty(t, prog.Skipped)
		}
		for _, ref := range prog.Skipped {
			assert.Equal(t, hot, ref, "only the hot counter can keep failing")
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d CompactAll runs, hot counter skipped in %d, %d increments on it", runs, skipped, added.Load())

	for i, db := range nodes {
		assert.Equal(t, 5+added.Load(), causalCount(t, db, hot), "hot counter on node %d", i+1)
		for _, ref := range cold {
			assert.EqualValues(t, 5, causalCount(t, db, ref), "%v on node %d", ref, i+1)
		}
	}
	for _, ref := range cold {
		assert.EqualValues(t, 1, slotRows(t, nodes[1], ref), "%v compacted despite the hot counter before it", ref)
	}
}

func refOf(t testing.TB, db *gorm.DB, post Post) slotted.Ref {
	t.Helper()
	ref, err := slotted.RefOf(db, &Post{ID: post.ID}, "likes")
	require.NoError(t, err)
	return ref
}
