package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotted-go/slotted"
)

// loadResult is what the workers of one cell measured.
type loadResult struct {
	ok        int64
	errs      Errors
	hist      histogram
	elapsed   time.Duration
	stoppedBy string
}

// openConns makes the pool hold n connections before timing starts, so the
// first operations don't pay for connection set-up.
func openConns(ctx context.Context, db *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close() // back to the pool: it keeps them (MaxIdleConns = n)
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("opening connection %d of %d: %w", len(conns)+1, n, err)
		}
		conns = append(conns, c)
		if err := c.PingContext(ctx); err != nil {
			return fmt.Errorf("opening connection %d of %d: %w", len(conns), n, err)
		}
	}
	return nil
}

// warmUp runs op a few times on every worker at once: statements get
// prepared on each connection and caches filled before timing starts. Lock
// conflicts are expected and ignored; any other error means the cell cannot
// run (missing table, refused connection) and is returned.
func warmUp(ctx context.Context, workers int, op func(context.Context) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for range 2 {
				if err := op(ctx); err != nil && slotted.ConflictOf(err) == slotted.NoConflict {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// runLoad runs op on workers goroutines until d has passed or maxOps
// operations have started. The time limit is a flag the workers check
// between operations, never a context deadline: cancelling a statement in
// flight leaves unknown whether it committed, and the exactness check needs to
// know. Only ctx (Ctrl-C) interrupts statements; runLoad then returns ctx.Err().
func runLoad(ctx context.Context, workers int, d time.Duration, maxOps int64, op func(context.Context) error) (*loadResult, error) {
	type worker struct {
		ok   int64
		errs Errors
		hist histogram
	}
	ws := make([]worker, workers)
	var (
		stop    atomic.Bool
		capped  atomic.Bool
		started atomic.Int64
		wg      sync.WaitGroup
	)
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	begin := time.Now()
	for i := range ws {
		w := &ws[i]
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				if started.Add(1) > maxOps {
					capped.Store(true)
					return
				}
				t0 := time.Now()
				err := op(ctx)
				took := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					w.errs.add(err)
					if slotted.ConflictOf(err) == slotted.NoConflict {
						// Not a lock conflict (a broken connection, say): don't
						// spin on it at full speed.
						time.Sleep(time.Millisecond)
					}
					continue
				}
				w.ok++
				w.hist.record(took)
			}
		})
	}
	wg.Wait()
	res := &loadResult{elapsed: time.Since(begin), stoppedBy: "duration"}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if capped.Load() {
		res.stoppedBy = "max-ops"
	}
	for i := range ws {
		res.ok += ws[i].ok
		res.errs.merge(ws[i].errs)
		res.hist.merge(&ws[i].hist)
	}
	if res.ok == 0 && res.errs.Other > 0 {
		return res, errors.New(res.errs.FirstOther)
	}
	return res, nil
}
