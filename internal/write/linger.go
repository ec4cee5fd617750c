package write

import "time"

// Linger: batches as large as the process's writers.
//
// With W callers writing in a loop through one coalescer, a statement carrying
// k of them ends, the oldest queued caller is promoted at once and takes the
// W-k queued behind it, and the k return and queue behind that statement: the
// batches alternate k, W-k, and hold W/2 writes on average. One process with
// many writers hardly notices (32 writes per statement at 64 writers), but many
// app instances with a few writers each do: at 8 processes x 8 writers a
// statement carried 4.5 writes, and the database ran 7,500 statements a second
// for 32k writes, CPU-bound on two cores.
//
// A promoted leader therefore waits, before it takes its batch, for the callers
// of the statement that just ended to queue again: until the queue holds the
// callers that were queued when it was promoted plus those of that statement,
// or Config.Linger has passed, or a quarter of the recent statement time,
// whichever comes first (the callers it waits for return within microseconds
// when the machine has a free core; the bound keeps the wait small against the
// statement it saves, and callers that went away cost at most that). A caller
// that finds nothing in flight still writes at once, so one writer never waits.

// lingerState is the coalescer's view of its recent batches, guarded by
// coalescer.mu.
type lingerState struct {
	writers int           // callers in the last statement plus those queued when it ended
	stmt    time.Duration // recent statement time: a moving average
	wake    chan struct{} // while a leader lingers: closed when the queue holds want callers
	want    int
}

// linger holds a promoted leader back until the callers of the last statement
// have queued again (see above). w is queued.
func (c *coalescer) linger(w *waiter) {
	d := c.p.cfg.Linger
	if d <= 0 {
		return
	}
	c.mu.Lock()
	l := &c.lingering
	want := l.writers
	if l.stmt > 0 {
		d = min(d, l.stmt/4)
	}
	if len(c.pending) >= want || d <= 0 {
		c.mu.Unlock()
		return
	}
	wake := make(chan struct{})
	l.wake, l.want = wake, want
	c.mu.Unlock()
	t := time.NewTimer(d)
	select {
	case <-wake:
	case <-t.C:
	case <-w.ctx.Done(): // leadBatch sees it and hands over
	}
	t.Stop()
	c.mu.Lock()
	if l.wake == wake {
		l.wake = nil
	}
	c.mu.Unlock()
}

// arrived wakes a lingering leader once the queue is as long as it waits for
// (under mu, after a caller queued).
func (c *coalescer) arrived() {
	if l := &c.lingering; l.wake != nil && len(c.pending) >= l.want {
		close(l.wake)
		l.wake = nil
	}
}

// company reports whether a caller that finds a statement slot free should
// still linger (under mu): the last statement had other callers, who are
// about to queue again.
func (c *coalescer) company() bool { return c.p.cfg.Linger > 0 && c.lingering.writers > 1 }

// took notes a statement's callers, the callers queued when it ended, and how
// long it took.
func (c *coalescer) took(callers int, stmt time.Duration) {
	c.mu.Lock()
	c.tookLocked(callers, stmt)
	c.mu.Unlock()
}

func (c *coalescer) tookLocked(callers int, stmt time.Duration) {
	l := &c.lingering
	l.writers = callers + len(c.pending)
	if l.stmt == 0 {
		l.stmt = stmt
	} else {
		l.stmt += (stmt - l.stmt) / 8
	}
}

// endTurnTook is endTurn after a lone leader's statement that began at start
// (zero when Linger is off): took and the hand-over under one lock, as the
// single writer's path takes it on every call.
func (c *coalescer) endTurnTook(start time.Time, callers int) {
	c.mu.Lock()
	if !start.IsZero() {
		c.tookLocked(callers, time.Since(start))
	}
	c.handOver()
	c.mu.Unlock()
}
