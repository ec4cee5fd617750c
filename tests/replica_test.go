package tests

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/slotted-go/slotted"
)

// PostgreSQL primary + streaming replica suite (scripts/pgreplica.sh), with
// gorm.io/plugin/dbresolver sending reads to the replica. The replica's
// replay is paused with pg_wal_replay_pause(), so it lags deterministically:
// it keeps the state of the moment of the pause while the primary goes on.

// replicaSetup is one test's view of the pair.
type replicaSetup struct {
	app     *gorm.DB // dbresolver (replica reads) + the plugin: what an application uses
	primary *gorm.DB // plain pool on the primary, with the plugin, for checking
	replica *gorm.DB // plain pool on the replica, without the plugin
	// fresh, when set, sends the app's next replica read to the primary
	// instead, as a second replica with no lag would (see withFreshReplica).
	fresh atomic.Bool
}

// replicaPair recreates the test tables on the primary, waits for the replica
// to replay that, and registers dbresolver (first, as applications usually do)
// and the plugin on a pool on the primary. With freshReplica the resolver has
// two replicas: the lagging one and the primary standing in for one without lag.
func replicaPair(t *testing.T, freshReplica bool) *replicaSetup {
	t.Helper()
	primary, primaryDSN, replicaDSN := pgPair(t)
	require.NoError(t, primary.Migrator().DropTable(append(testModels, slotted.DefaultTable)...))
	require.NoError(t, primary.Use(slotted.New(slotted.Config{})))
	require.NoError(t, primary.AutoMigrate(testModels...))
	s := &replicaSetup{primary: primary, replica: openCluster(t, postgres.Open(replicaDSN))}
	s.caughtUp(t)

	s.app = openCluster(t, postgres.Open(primaryDSN))
	cfg := dbresolver.Config{Replicas: []gorm.Dialector{postgres.Open(replicaDSN)}}
	if freshReplica {
		cfg.Replicas = append(cfg.Replicas, postgres.Open(primaryDSN))
		cfg.Policy = dbresolver.PolicyFunc(func(pools []gorm.ConnPool) gorm.ConnPool {
			if s.fresh.CompareAndSwap(true, false) {
				return pools[1]
			}
			return pools[0]
		})
	}
	require.NoError(t, s.app.Use(dbresolver.Register(cfg)))
	require.NoError(t, s.app.Use(slotted.New(slotted.Config{})))
	return s
}

// caughtUp waits until the replica has replayed everything the primary wrote.
func (s *replicaSetup) caughtUp(t *testing.T) {
	t.Helper()
	var lsn string
	require.NoError(t, s.primary.Raw("SELECT pg_current_wal_lsn()::text").Row().Scan(&lsn))
	waitFor(t, 30*time.Second, "replica replays up to "+lsn, func() bool {
		var ok bool
		require.NoError(t, s.replica.Raw("SELECT pg_last_wal_replay_lsn() >= ?::pg_lsn", lsn).Row().Scan(&ok))
		return ok
	})
}

// pause stops the replica's replay until the test ends.
func (s *replicaSetup) pause(t *testing.T) {
	t.Helper()
	require.NoError(t, s.replica.Exec("SELECT pg_wal_replay_pause()").Error)
	t.Cleanup(func() {
		require.NoError(t, s.replica.Exec("SELECT pg_wal_replay_resume()").Error)
		s.caughtUp(t)
	})
	waitFor(t, 10*time.Second, "replay paused", func() bool {
		var state string
		require.NoError(t, s.replica.Raw("SELECT pg_get_wal_replay_pause_state()").Row().Scan(&state))
		return state == "paused"
	})
}

func (s *replicaSetup) count(t *testing.T, model any, counter string) int64 {
	t.Helper()
	n, err := slotted.Count(s.primary, model, counter)
	require.NoError(t, err)
	return n
}

// TestReplicaWritesAndTheirReadsUsePrimary: with the replica lagging, the
// plugin's writes and the reads inside Reset, Compact and RollUp run on the
// primary (so a Reset never keeps an increment it could not see), a read the
// caller routes with dbresolver.Write sees the primary, and a plain Count
// reads the replica, as dbresolver means it to.
func TestReplicaWritesAndTheirReadsUsePrimary(t *testing.T) {
	s := replicaPair(t, false)
	a := Article{Title: "before"}
	require.NoError(t, s.app.Create(&a).Error)
	require.NoError(t, slotted.Add(s.app, &Article{ID: a.ID}, "likes", 3))
	s.caughtUp(t)
	s.pause(t)

	require.NoError(t, slotted.Add(s.app, &Article{ID: a.ID}, "likes", 4))
	n, err := slotted.Count(s.app, &Article{ID: a.ID}, "likes")
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "a plain read comes from the lagging replica")
	n, err = slotted.Count(s.app.Clauses(dbresolver.Write), &Article{ID: a.ID}, "likes")
	require.NoError(t, err)
	assert.EqualValues(t, 7, n, "dbresolver.Write reads the primary")

	require.NoError(t, slotted.RollUp(s.app, &Article{ID: a.ID}))
	var col int64
	require.NoError(t, s.primary.Raw("SELECT likes_count FROM articles WHERE id = ?", a.ID).Row().Scan(&col))
	assert.EqualValues(t, 7, col, "RollUp summed on the primary")

	require.NoError(t, slotted.Add(s.app, &Article{ID: a.ID}, "likes", 5))
	require.NoError(t, slotted.Compact(s.app, &Article{ID: a.ID}, "likes"))
	assert.EqualValues(t, 12, s.count(t, &Article{ID: a.ID}, "likes"), "Compact kept every increment")

	require.NoError(t, slotted.Add(s.app, &Article{ID: a.ID}, "likes", 6))
	require.NoError(t, slotted.Reset(s.app, &Article{ID: a.ID}, "likes", 100))
	assert.EqualValues(t, 100, s.count(t, &Article{ID: a.ID}, "likes"), "Reset saw the increment before it")
}

// TestReplicaSweepKeepsLiveCounters: posts created and liked while the
// replica lags are live. Sweep must not take them for orphans, even when its
// reads land on replicas at different lag (the counter ids from a fresh one,
// the parents from the lagging one): its reads decide a delete, so they
// belong on the primary. Needs the routing fix of issue #8 item 2.
func TestReplicaSweepKeepsLiveCounters(t *testing.T) {
	s := replicaPair(t, true)
	old := Post{Title: "old"}
	require.NoError(t, s.app.Create(&old).Error)
	require.NoError(t, slotted.Add(s.app, &Post{ID: old.ID}, "likes", 2))
	orphan := slotted.Ref{Type: "posts.likes", ID: "999999"}
	require.NoError(t, slotted.AddRef(s.app, orphan, 1))
	s.caughtUp(t)
	s.pause(t)

	var live []Post
	for i := range 5 {
		p := Post{Title: fmt.Sprint("new ", i)}
		require.NoError(t, s.app.Create(&p).Error)
		require.NoError(t, slotted.Add(s.app, &Post{ID: p.ID}, "likes", 10))
		live = append(live, p)
	}
	s.fresh.Store(true) // the next replica read (Sweep's first) goes to the replica without lag
	prog, err := slotted.Sweep(s.app, &Post{})
	require.NoError(t, err)
	t.Logf("sweep: %+v", prog)

	for _, p := range live {
		assert.EqualValues(t, 10, s.count(t, &Post{ID: p.ID}, "likes"), "live post %d keeps its counter", p.ID)
	}
	assert.EqualValues(t, 2, s.count(t, &Post{ID: old.ID}, "likes"))
	n, err := slotted.CountRef(s.primary, orphan)
	require.NoError(t, err)
	assert.Zero(t, n, "the real orphan is swept")
}

// TestReplicaRollUpAllAndCompactAllSeePrimary: RollUpAll's pages and the
// CompactAll scan decide what is written, so under a lagging replica they
// still cover records and counters created since the lag began. Needs the
// routing fix of issue #8 item 2.
func TestReplicaRollUpAllAndCompactAllSeePrimary(t *testing.T) {
	s := replicaPair(t, false)
	s.pause(t)
	var arts []Article
	for i := range 4 {
		a := Article{Title: fmt.Sprint(i)}
		require.NoError(t, s.app.Create(&a).Error)
		for range 3 {
			require.NoError(t, slotted.Add(s.app, &Article{ID: a.ID}, "likes", 2))
		}
		arts = append(arts, a)
	}
	for _, a := range arts {
		ref, err := slotted.RefOf(s.app, &a, "likes")
		require.NoError(t, err)
		for slot := range 3 { // three slot rows at least, whichever slots the writes drew
			require.NoError(t, s.primary.Create(&slotted.SlottedCounter{RecordType: slotted.Key(ref.Type),
				RecordID: slotted.Key(ref.ID), Slot: int32(1000 + slot), Count: 0}).Error)
		}
	}

	_, err := slotted.RollUpAll(s.app, &Article{})
	require.NoError(t, err)
	for _, a := range arts {
		var col int64
		require.NoError(t, s.primary.Raw("SELECT likes_count FROM articles WHERE id = ?", a.ID).Row().Scan(&col))
		assert.EqualValues(t, 6, col, "article %d created during the lag is rolled up", a.ID)
	}

	_, err = slotted.CompactAll(s.app)
	require.NoError(t, err)
	for _, a := range arts {
		ref, err := slotted.RefOf(s.app, &a, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 1, slotRows(t, s.primary, ref), "counter %v created during the lag is compacted", ref)
		assert.EqualValues(t, 6, s.count(t, &Article{ID: a.ID}, "likes"))
	}
}
