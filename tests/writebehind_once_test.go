package tests

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slotted-go/slotted"
)

// TestBufferExactlyOnceUnderKills: flush statements are hit by faults that
// leave their outcome unknown to the client: the server kills the
// connection (KILL / pg_terminate_backend) a moment after the statement was
// sent, or the answer of a statement that committed is lost. Before, a flush
// that committed but reported an error went back to pending and was written
// again (200 counters doubled in the study behind issue 18). Every counter
// must now hold exactly what was added: none doubled, none lost.
func TestBufferExactlyOnceUnderKills(t *testing.T) {
	testEachFaultDB(t, func(t *testing.T, srv *faultServer) {
		db, hooks := srv.hookedGorm(t, slotted.Config{})
		sqlDB, err := db.DB()
		require.NoError(t, err)
		sqlDB.SetMaxOpenConns(8)

		var kills, lost, aimed atomic.Int64
		var faults sync.WaitGroup
		var on atomic.Bool
		// gate orders every faults.Add before the faults.Wait that follows
		// on.Store(false): a flush that saw on just before it turned off
		// would otherwise Add concurrently with Wait.
		var gate sync.Mutex
		isFlush := func(q string) bool {
			return strings.HasPrefix(strings.TrimSpace(q), "INSERT") && strings.Contains(q, slotted.DefaultTable)
		}
		hooks.loseReply = func(q string) bool {
			if on.Load() && isFlush(q) && rand.IntN(5) == 0 {
				lost.Add(1)
				return true
			}
			return false
		}
		hooks.onExec = func(q string, after bool, _ error) {
			if after || !isFlush(q) || rand.IntN(3) != 0 {
				return
			}
			gate.Lock()
			defer gate.Unlock()
			if !on.Load() {
				return
			}
			aimed.Add(1)
			faults.Add(1)
			go func() { // the statement is on its way: kill it mid-flight
				defer faults.Done()
				time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				n, _ := srv.kill(ctx)
				kills.Add(int64(n))
			}()
		}

		buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: 10 * time.Millisecond, FlushAt: 64, OnError: func(error) {}})
		require.NoError(t, err)
		const counters, writers = 300, 16
		stop := time.Now().Add(3 * time.Second)
		var want [counters]atomic.Int64
		on.Store(true)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(stop); i++ {
					c := (w*1000 + i*7) % counters
					d := int64(1 + i%3)
					if assert.NoError(t, buf.AddRef(slotted.Ref{Type: "pages.views", ID: strconv.Itoa(c)}, d)) {
						want[c].Add(d)
					}
					if i%5 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(200 * time.Millisecond) // a few more flushes under faults
		gate.Lock()
		on.Store(false)
		gate.Unlock()
		faults.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for err := buf.Close(ctx); err != nil; err = buf.Flush(ctx) {
			require.NoError(t, ctx.Err(), "the buffer never flushed: %v", err)
			time.Sleep(50 * time.Millisecond)
		}
		bs := buf.Stats()
		require.Zero(t, bs.PendingWrites)
		ps, err := slotted.StatsOf(db)
		require.NoError(t, err)

		doubled, short := 0, 0
		for c := range counters {
			got, err := slotted.CountRef(db, slotted.Ref{Type: "pages.views", ID: strconv.Itoa(c)})
			require.NoError(t, err)
			switch w := want[c].Load(); {
			case got > w:
				doubled++
				t.Errorf("counter %d: %d, %d added (+%d)", c, got, w, got-w)
			case got < w:
				short++
				t.Errorf("counter %d: %d, %d added (%d)", c, got, w, got-w)
			}
		}
		t.Logf("%d flush statements aimed at (%d connections killed), %d answers lost; %d flushes, %d failed; "+
			"settled by marker: %d had committed, %d had not; counters doubled %d, short %d of %d",
			aimed.Load(), kills.Load(), lost.Load(), bs.Flushes, bs.FlushErrors, ps.SettledLanded, ps.SettledLost, doubled, short, counters)
		assert.Positive(t, kills.Load()+lost.Load(), "no fault hit a flush")
		assert.Positive(t, ps.SettledLanded, "no flush statement committed despite its error: the test did not test that")
		var markers int64
		require.NoError(t, db.Table(slotted.DefaultTable).Where("record_type = ?", slotted.MarkerType).Count(&markers).Error)
		assert.Zero(t, markers, "Close drops the buffer's marker")
	})
}
