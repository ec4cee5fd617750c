package tests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestOnceOutcomeUnderKills: AddOnce/RemoveOnce batches (with plain writes
// riding in them) under connection kills every 100-300 ms, and 1 COMMIT in
// 10 and 1 statement in 40 having their answer thrown away after the server
// took them. Before, such a batch carried no outcome marker: a caller whose
// COMMIT was answered by an error could not tell whether its key applied.
// Now every call that returned nil did what it reported (the key is there,
// or gone, and counted), and every call that returned an error other than
// its context's wrote nothing: an AddOnce's key is absent, a RemoveOnce's
// still there. The counters hold exactly their keys' deltas, and the plain
// writes exactly their nil calls.
func TestOnceOutcomeUnderKills(t *testing.T) {
	testEachFaultDB(t, func(t *testing.T, srv *faultServer) {
		db, hooks := srv.hookedGorm(t, slotted.Config{MaxInFlight: 2})
		sqlDB, err := db.DB()
		require.NoError(t, err)
		sqlDB.SetMaxOpenConns(16)

		var on atomic.Bool
		var lostStmts, lostCommits atomic.Int64
		hooks.onExec = func(string, bool, error) {}
		hooks.loseReply = func(q string) bool {
			q = strings.TrimSpace(q)
			if on.Load() && (strings.HasPrefix(q, "INSERT") || strings.HasPrefix(q, "DELETE")) && rand.IntN(40) == 0 {
				lostStmts.Add(1)
				return true
			}
			return false
		}
		hooks.loseCommit = func() bool {
			if on.Load() && rand.IntN(10) == 0 {
				lostCommits.Add(1)
				return true
			}
			return false
		}

		const hot = 6
		type call struct {
			ref     slotted.Ref
			key     string
			remove  bool
			err     error
			applied bool
		}
		var mu sync.Mutex
		var calls []call
		var plainOK, plainUnknown [hot]atomic.Int64
		var plainErr atomic.Int64
		stop := make(chan struct{})
		var bg sync.WaitGroup
		var killRounds atomic.Int64
		on.Store(true)
		bg.Add(1)
		go func() {
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, _ = srv.kill(ctx)
				cancel()
				killRounds.Add(1)
			}
		}()
		end := time.Now().Add(3 * time.Second)
		var wg sync.WaitGroup
		for w := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(end); i++ {
					c := (w + i) % hot
					if w%4 == 3 { // plain writes in the same coalescer, no deadline
						switch err := slotted.AddRef(db, slotted.Ref{Type: "once.plain", ID: strconv.Itoa(c)}, 1); {
						case err == nil:
							plainOK[c].Add(1)
						case errors.Is(err, slotted.ErrOutcomeUnknown):
							plainUnknown[c].Add(1)
						default:
							plainErr.Add(1)
						}
						continue
					}
					cdb, cancel := db, context.CancelFunc(func() {})
					if w%2 == 0 {
						var ctx context.Context
						ctx, cancel = context.WithTimeout(context.Background(), time.Duration(5+rand.IntN(46))*time.Millisecond)
						cdb = db.WithContext(ctx)
					}
					ref := slotted.Ref{Type: "once.hot", ID: strconv.Itoa(c)}
					key := fmt.Sprintf("w%d-%d", w, i)
					applied, err := slotted.AddRefOnce(cdb, ref, 1, key)
					cancel()
					mu.Lock()
					calls = append(calls, call{ref: ref, key: key, err: err, applied: applied})
					mu.Unlock()
					if err != nil || !applied || i%2 == 0 {
						continue
					}
					cdb, cancel = db, func() {}
					if w%2 == 0 {
						var ctx context.Context
						ctx, cancel = context.WithTimeout(context.Background(), time.Duration(5+rand.IntN(46))*time.Millisecond)
						cdb = db.WithContext(ctx)
					}
					removed, err := slotted.RemoveRefOnce(cdb, ref, key)
					cancel()
					mu.Lock()
					calls = append(calls, call{ref: ref, key: key, remove: true, err: err, applied: removed})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(stop)
		bg.Wait()
		on.Store(false)
		time.Sleep(500 * time.Millisecond) // COMMITs cut short by deadlines finish on the server

		type onceKey struct{ RecordType, RecordID, OpKey string }
		var keys []onceKey
		require.NoError(t, db.Table(slotted.DefaultOnceTable).Find(&keys).Error)
		present := map[string]bool{}
		perCounter := map[string]int64{}
		for _, k := range keys {
			present[k.RecordType+"/"+k.RecordID+"/"+k.OpKey] = true
			perCounter[k.RecordID]++
		}
		// A key's last call decides whether it should be there.
		type fate struct {
			want, known bool
			calls       []call
		}
		fates := map[string]*fate{}
		var tally struct{ ok, ctxErr, otherErr, notApplied int }
		for _, cl := range calls {
			id := cl.ref.Type + "/" + cl.ref.ID + "/" + cl.key
			f := fates[id]
			if f == nil {
				f = &fate{}
				fates[id] = f
			}
			f.calls = append(f.calls, cl)
			switch {
			case cl.err == nil:
				tally.ok++
				if !cl.applied {
					tally.notApplied++
					t.Errorf("%s: a fresh key reported not applied/removed (remove=%v)", id, cl.remove)
				}
				f.want, f.known = !cl.remove, true
			case errIsContext(cl.err), errors.Is(cl.err, slotted.ErrOutcomeUnknown):
				tally.ctxErr++ // unknown: the caller left, or the marker could not be read
				f.known = false
			default:
				tally.otherErr++
				// Nothing written: an AddOnce's key stays absent, a RemoveOnce's present.
				f.want, f.known = cl.remove, true
			}
		}
		for id, f := range fates {
			if f.known && present[id] != f.want {
				t.Errorf("%s: key present %v, but its calls say %v: %+v", id, present[id], f.want, f.calls)
			}
		}
		for c := range hot {
			got, err := slotted.CountRef(db, slotted.Ref{Type: "once.hot", ID: strconv.Itoa(c)})
			require.NoError(t, err)
			assert.Equal(t, perCounter[strconv.Itoa(c)], got, "once.hot %d: the counter holds its keys' deltas", c)
			got, err = slotted.CountRef(db, slotted.Ref{Type: "once.plain", ID: strconv.Itoa(c)})
			require.NoError(t, err)
			assert.GreaterOrEqual(t, got, plainOK[c].Load(), "once.plain %d: its nil writes", c)
			assert.LessOrEqual(t, got, plainOK[c].Load()+plainUnknown[c].Load(), "once.plain %d: its nil writes (and those of unknown outcome)", c)
		}
		ps, err := slotted.StatsOf(db)
		require.NoError(t, err)
		t.Logf("%d kill rounds, %d statement and %d COMMIT answers lost; once calls: %d nil, %d errors other than a context's (none wrote), "+
			"%d context errors or ErrOutcomeUnknown; plain: %d errors; settled by marker: %d committed, %d not",
			killRounds.Load(), lostStmts.Load(), lostCommits.Load(), tally.ok, tally.otherErr, tally.ctxErr, plainErr.Load(), ps.SettledLanded, ps.SettledLost)
		assert.Positive(t, tally.ok)
		assert.Positive(t, lostCommits.Load())
		assert.Positive(t, ps.SettledLanded, "no batch committed despite its error: the test did not test that")
	})
}

// TestMarkerLookupLendsSlot: with MaxInFlight 1, a statement whose answer was
// lost looks its marker up, and the lookup is held (another transaction
// locks the marker's row) for 3 s. Before, the lookup held the pool's only
// statement slot: every other writer waited the 3 s. Now other writers go
// on meanwhile, and the held write returns nil (it committed) once the lock
// goes.
func TestMarkerLookupLendsSlot(t *testing.T) {
	testEachFaultDB(t, func(t *testing.T, srv *faultServer) {
		db, hooks := srv.hookedGorm(t, slotted.Config{MaxInFlight: 1})
		held := slotted.Ref{Type: "lend.held", ID: "1"}
		require.NoError(t, slotted.AddRef(db, held, 1)) // its marker now has a row, the pool's only marker

		var ids []string
		require.NoError(t, db.Table(slotted.DefaultTable).Where("record_type = ?", slotted.MarkerType).Pluck("record_id", &ids).Error)
		require.Len(t, ids, 1)
		admin := srv.open(t, srv.db)
		var lockTx atomic.Pointer[lockHolder]
		var armed atomic.Bool
		hooks.onExec = func(string, bool, error) {}
		hooks.loseReply = func(q string) bool {
			if !strings.HasPrefix(strings.TrimSpace(q), "INSERT") || !armed.CompareAndSwap(true, false) {
				return false
			}
			// The statement committed; before its caller hears anything, lock its marker's row.
			l, err := lockRow(admin, srv.name, ids[0])
			if err != nil {
				t.Errorf("locking the marker row: %v", err)
				return false
			}
			lockTx.Store(l)
			return true
		}
		armed.Store(true)
		const hold = 3 * time.Second
		heldDone := make(chan error, 1)
		start := time.Now()
		go func() { heldDone <- slotted.AddRef(db, held, 1) }()
		require.Eventually(t, func() bool { return lockTx.Load() != nil }, 5*time.Second, time.Millisecond)
		release := time.AfterFunc(hold, func() { lockTx.Load().release() })
		defer release.Stop()

		var others atomic.Int64
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					if !assert.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "lend.other", ID: strconv.Itoa(w)}, 1)) {
						return
					}
					others.Add(1)
				}
			}()
		}
		wg.Wait()
		othersTook := time.Since(start)
		err := <-heldDone
		heldTook := time.Since(start)
		t.Logf("40 other writes took %v while the lookup was held; the held write returned %v after %v", othersTook.Round(time.Millisecond), err, heldTook.Round(time.Millisecond))
		assert.Less(t, othersTook, hold/2, "other writers waited for the held lookup")
		require.NoError(t, err, "the held write committed: the lookup says so")
		assert.GreaterOrEqual(t, heldTook, hold)
		n, err := slotted.CountRef(db, held)
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)
		var total int64
		for w := range 8 {
			n, err := slotted.CountRef(db, slotted.Ref{Type: "lend.other", ID: strconv.Itoa(w)})
			require.NoError(t, err)
			total += n
		}
		assert.EqualValues(t, 40, total)
	})
}

// lockHolder holds a row lock in a transaction of the test's own pool.
type lockHolder struct {
	release func()
}

// lockRow locks the marker row id (by its primary key: no gap locks) in a
// transaction on admin until release.
func lockRow(admin *sql.DB, server, id string) (*lockHolder, error) {
	tx, err := admin.Begin()
	if err != nil {
		return nil, err
	}
	q := "SELECT slot FROM slotted_counters WHERE record_type = ? AND record_id = ? AND slot = 0 FOR UPDATE"
	if server == dbPostgres {
		q = "SELECT slot FROM slotted_counters WHERE record_type = $1 AND record_id = $2 AND slot = 0 FOR UPDATE"
	}
	var slot int
	if err := tx.QueryRow(q, slotted.MarkerType, id).Scan(&slot); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return &lockHolder{release: func() { _ = tx.Rollback() }}, nil
}

// TestPruneMarkers: a process that exits leaves its outcome markers' rows
// (here: a second plugin instance that writes, then is dropped, as a
// SIGKILLed process leaves its rows; and rows of markers made 25 hours ago,
// in the documented ID format, as such a process left a day earlier). A
// Runner pass (and PruneMarkers) deletes the markers made more than 24 h
// ago, and leaves alone the live process's markers while it writes, the
// recently exited process's (their owner may still live: only their age
// tells), and markers of the older ID format (no time in them).
func TestPruneMarkers(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		name := dialect(db)
		markerIDs := func() map[string]int64 {
			var rows []struct {
				RecordID string
				Count    int64
			}
			require.NoError(t, db.Table(slotted.DefaultTable).Select("record_id", "count").Where("record_type = ?", slotted.MarkerType).Find(&rows).Error)
			out := map[string]int64{}
			for _, r := range rows {
				out[r.RecordID] = r.Count
			}
			return out
		}
		// The recently exited process.
		inFlight := 4
		if name == dbSQLite {
			inFlight = 1 // no markers there; concurrent BEGIN IMMEDIATEs only wait for each other
		}
		gone := openRaw(t, name)
		require.NoError(t, gone.Use(slotted.New(slotted.Config{MaxInFlight: inFlight})))
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, slotted.AddRef(gone, slotted.Ref{Type: "prune.c", ID: strconv.Itoa(i % 3)}, 1))
				_, err := slotted.AddRefOnce(gone, slotted.Ref{Type: "prune.once", ID: "1"}, 1, strconv.Itoa(i))
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		recent := markerIDs()
		if sqlDB, err := gone.DB(); err == nil {
			_ = sqlDB.Close()
		}
		if name == dbSQLite {
			assert.Empty(t, recent, "SQLite: no markers")
			n, err := slotted.PruneMarkers(db)
			require.NoError(t, err)
			assert.Zero(t, n)
			return
		}
		require.NotEmpty(t, recent)
		// Left a day ago: "t", 12 hex digits of Unix milliseconds, 32 random hex digits (docs/outcomes.md).
		old := map[string]bool{}
		for i := range 5 {
			id := fmt.Sprintf("t%012x%032x", time.Now().Add(-25*time.Hour).UnixMilli(), rand.Uint64()+uint64(i))
			old[id] = true
			require.NoError(t, db.Table(slotted.DefaultTable).Create(map[string]any{"record_type": slotted.MarkerType, "record_id": id, "slot": 0, "count": 7}).Error)
		}
		legacy := fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
		require.NoError(t, db.Table(slotted.DefaultTable).Create(map[string]any{"record_type": slotted.MarkerType, "record_id": legacy, "slot": 0, "count": 3}).Error)

		// The live process writes all along, before and during the prune.
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "prune.c", ID: "live"}, 1))
		live := map[string]bool{}
		for id := range markerIDs() {
			if _, ok := recent[id]; !ok && !old[id] && id != legacy {
				live[id] = true
			}
		}
		require.NotEmpty(t, live)
		stop := make(chan struct{})
		var liveOK atomic.Int64
		var writers sync.WaitGroup
		for range 4 {
			writers.Add(1)
			go func() {
				defer writers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if !assert.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "prune.c", ID: "live"}, 1)) {
						return
					}
					liveOK.Add(1)
				}
			}()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var pass slotted.Pass
		require.NoError(t, slotted.Runner{Interval: time.Hour, PruneKeys: true, OnPass: func(p slotted.Pass) { pass = p; cancel() }}.Run(ctx, db))
		close(stop)
		writers.Wait()
		require.NoError(t, pass.Err)
		assert.EqualValues(t, len(old), pass.Markers, "every old marker's row pruned, and only those")
		after := markerIDs()
		for id := range old {
			assert.NotContains(t, after, id, "a marker made 25 h ago stayed")
		}
		for id := range recent {
			assert.Contains(t, after, id, "a recent marker was pruned")
		}
		for id := range live {
			assert.Contains(t, after, id, "a live marker was pruned")
		}
		assert.Contains(t, after, legacy, "a marker of the older format was pruned")
		n, err := slotted.CountRef(db, slotted.Ref{Type: "prune.c", ID: "live"})
		require.NoError(t, err)
		assert.Equal(t, liveOK.Load()+1, n, "the live writes are exact")
		n, err = slotted.PruneMarkers(db)
		require.NoError(t, err)
		assert.Zero(t, n, "nothing old left")
	})
}
