package tests

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/slotted-go/slotted"
)

// TestWriteErrorsMeanNotCountedFreeze: 64 writers increment a few hot
// counters and the server freezes (SIGSTOP of its processes) for 3 s in the
// middle; as it resumes, its client connections are killed. Half the writers have no deadline, half 5-50 ms deadlines (on
// counters of their own). Statements in flight at the freeze finish after
// it, long after their callers with deadlines left. Every write that
// returned nil is counted once, every error other than a context's is not
// counted: the counters without deadlines hold exactly their nil writes,
// those with deadlines at least their nil writes and at most those plus
// their context errors.
func TestWriteErrorsMeanNotCountedFreeze(t *testing.T) {
	testEachFaultDB(t, func(t *testing.T, srv *faultServer) {
		db, _ := srv.hookedGorm(t, slotted.Config{})
		sqlDB, err := db.DB()
		require.NoError(t, err)
		sqlDB.SetMaxOpenConns(16)

		const hot = 8
		type tally struct{ ok, ctxErr, otherErr atomic.Int64 }
		var plain, timed [hot]tally
		var errSamples sync.Map
		count := func(tl *tally, err error) {
			switch {
			case err == nil:
				tl.ok.Add(1)
			case errIsContext(err):
				tl.ctxErr.Add(1)
			default:
				tl.otherErr.Add(1)
				errSamples.LoadOrStore(err.Error(), struct{}{})
			}
		}
		end := time.Now().Add(5 * time.Second)
		var wg sync.WaitGroup
		for w := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(end); i++ {
					c := (w + i) % hot
					if w%2 == 0 {
						count(&plain[c], slotted.AddRef(db, slotted.Ref{Type: "freeze.plain", ID: strconv.Itoa(c)}, 1))
						continue
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5+rand.IntN(46))*time.Millisecond)
					count(&timed[c], slotted.AddRef(db.WithContext(ctx), slotted.Ref{Type: "freeze.timed", ID: strconv.Itoa(c)}, 1))
					cancel()
				}
			}()
		}
		time.Sleep(time.Second)
		var before int64
		for c := range hot {
			before += plain[c].ok.Load() + timed[c].ok.Load()
		}
		resumed := srv.freeze(t, 3*time.Second)
		<-resumed
		// As the server resumes, with every statement held by the freeze going on,
		// its client connections are killed twice: errors other than a context's.
		var killed int
		for range 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			n, _ := srv.kill(ctx)
			cancel()
			killed += n
			time.Sleep(20 * time.Millisecond)
		}
		wg.Wait()
		time.Sleep(500 * time.Millisecond) // statements left by their deadlines finish on the server

		var sum struct{ ok, ctxErr, otherErr, landedCtx int64 }
		for c := range hot {
			got, err := slotted.CountRef(db, slotted.Ref{Type: "freeze.plain", ID: strconv.Itoa(c)})
			require.NoError(t, err)
			p := &plain[c]
			assert.Equal(t, p.ok.Load(), got, "freeze.plain %d: %d nil, %d context errors, %d other errors", c, p.ok.Load(), p.ctxErr.Load(), p.otherErr.Load())
			sum.ok += p.ok.Load()
			sum.ctxErr += p.ctxErr.Load()
			sum.otherErr += p.otherErr.Load()

			got, err = slotted.CountRef(db, slotted.Ref{Type: "freeze.timed", ID: strconv.Itoa(c)})
			require.NoError(t, err)
			tm := &timed[c]
			assert.GreaterOrEqual(t, got, tm.ok.Load(), "freeze.timed %d: a nil write was not counted", c)
			assert.LessOrEqual(t, got, tm.ok.Load()+tm.ctxErr.Load(), "freeze.timed %d: more than nil writes plus context errors", c)
			sum.ok += tm.ok.Load()
			sum.ctxErr += tm.ctxErr.Load()
			sum.otherErr += tm.otherErr.Load()
			sum.landedCtx += got - tm.ok.Load()
		}
		var samples []string
		errSamples.Range(func(k, _ any) bool { samples = append(samples, k.(string)); return len(samples) < 5 })
		t.Logf("a 3 s freeze after %d nil writes, %d connections killed as it ended; writes: %d nil (each counted once), %d errors other than a context's (none counted), "+
			"%d context errors (%d of them counted); error samples: %q", before, killed, sum.ok, sum.otherErr, sum.ctxErr, sum.landedCtx, samples)
		assert.Positive(t, before)
		assert.Positive(t, sum.ctxErr, "no deadline passed during the freeze: the test did not test that")
	})
}
