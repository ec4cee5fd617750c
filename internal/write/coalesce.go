package write

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/tables"
)

// Coalescing is group commit in the client. Writes outside a transaction that
// arrive while the plugin's statement for the same connection pool (and the
// same dbresolver routing) is in flight queue up; when it ends, the oldest
// queued caller becomes the leader and writes the queue with one multi-row
// upsert: deltas summed per counter, one random slot per counter, rows in key
// order. Every caller returns after that statement, with its outcome, or when
// its context ends, whichever comes first: a write is exactly as durable, and
// as ambiguous after a deadline, as one statement of its own, and many writes
// share a round trip and a commit. A statement that fails with errs.ErrOverflow
// wrote nothing, but the overflow is one counter's: its callers then write
// alone, each with a statement of its own, so each gets its own outcome.
//
// A caller that finds nothing in flight is the leader at once and writes its
// own delta on its own context, the statement it would run without
// coalescing: no goroutine hop, no extra allocation. A leader writes one
// statement and then hands leadership to the oldest queued caller, so no
// caller serves others for long.

var (
	// errLead tells a queued caller that it leads the next statement.
	errLead = errors.New("slotted: lead the next batch")
	// errLeaderPanicked is what the callers in a statement get when a callback
	// panicked while it ran (in the leader's goroutine, where the panic goes on).
	errLeaderPanicked = errors.New("slotted: a callback panicked while the coalesced statement ran; whether it was written is unknown")
	// errAlone tells the callers of a statement that overflowed to write alone.
	errAlone = errors.New("slotted: write alone")
)

type coalesceKey struct {
	pool    gorm.ConnPool
	routing string // the caller's dbresolver settings and clauses, "" for none
}

type coalescer struct {
	p   *Engine
	key coalesceKey
	// ephemeral: a routed coalescer is removed when it goes idle, so routing
	// settings that vary per request cannot pile coalescers up.
	ephemeral bool

	mu      sync.Mutex
	leaders int              // statements in flight (or leaders taking their batch); at MaxInFlight callers queue
	dead    bool             // removed from p.coalescers: callers look it up again
	pending []*waiter        // queued callers, oldest first; empty unless leaders == MaxInFlight
	index   map[meta.Ref]int // take's scratch: a counter's row in the batch
	markers markerPool       // outcome markers of its statements (outcome.go)
	// settling: statements whose outcome is being looked up, their slots lent (outcome_lend.go)
	settling int

	lingering lingerState // Config.Linger (linger.go)
	// onceKinds is take's scratch too: the AddOnce (false) or RemoveOnce
	// (true) keys in the batch.
	onceKinds map[[3]tables.Key]bool
}

type waiterState uint8

const (
	waiting waiterState = iota // queued
	taken                      // in a statement: it gets that statement's outcome
	gone                       // left the queue (its context ended) with nothing written
)

type waiter struct {
	db  *gorm.DB
	ctx context.Context
	// rows are the caller's row deltas, each counter once, written together
	// or not at all: one[:] for a single counter (no allocation beyond the
	// waiter's), a bucketed counter's total and bucket, a bulk write's rows.
	rows []Row
	one  [1]Row
	// once guards rows with an AddOnce key: they are written only if the
	// key is new (once_batch.go). nil for every other write.
	once  *OnceWrite
	state waiterState // guarded by coalescer.mu, like lead and expired
	lead  bool
	// expired is its context's error as take saw it, once per take: a
	// deadline passing between two looks would leave a counter's row indexed
	// but empty.
	expired error
	done    chan error // the outcome, or errLead
}

// CoalescerFor returns the coalescer for db's writes, or nil when they are
// written directly: inside the caller's transaction (nothing is coalesced
// there), with coalescing off, in DryRun, or on a pool that cannot be a map key.
func (p *Engine) CoalescerFor(db *gorm.DB, pool gorm.ConnPool, inTx bool) *coalescer {
	if inTx || p.cfg.DisableCoalescing || db.DryRun {
		return nil
	}
	if t := reflect.TypeOf(pool); t == nil || !t.Comparable() {
		return nil
	}
	key := coalesceKey{pool: pool, routing: routingOf(db.Statement)}
	if c, ok := p.coalescers.Load(key); ok {
		return c.(*coalescer)
	}
	c, _ := p.coalescers.LoadOrStore(key, &coalescer{p: p, key: key, ephemeral: key.routing != ""})
	return c.(*coalescer)
}

// routingOf fingerprints what decides where a statement goes besides its pool:
// the settings and plugin clauses inherit carries (dbresolver.Write,
// dbresolver.Use). Callers batch together only when they agree on it.
func routingOf(stmt *gorm.Statement) string {
	var parts []string
	stmt.Settings.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("%v=%#v", k, v))
		return true
	})
	for name, c := range stmt.Clauses {
		if strings.Contains(name, ":") {
			parts = append(parts, fmt.Sprintf("%s=%#v", name, c.Expression))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

// Coalesce writes delta to ref through db's coalescer.
func (p *Engine) Coalesce(db *gorm.DB, c *coalescer, ref meta.Ref, slots int, delta int64) error {
	return p.CoalesceRows(db, c, Row{Ref: ref, Slots: slots, Delta: delta}, nil, nil)
}

// CoalesceRows writes one row (rows nil) or several rows (sorted, each
// counter once; written all or none) through db's coalescer, guarded by
// once's key when once is not nil.
func (p *Engine) CoalesceRows(db *gorm.DB, c *coalescer, one Row, rows []Row, once *OnceWrite) error {
	for {
		again, err := c.add(db, one, rows, once)
		if !again {
			return err
		}
		c = p.CoalescerFor(db, c.key.pool, false) // it went idle and was removed meanwhile
	}
}

func (c *coalescer) add(db *gorm.DB, one Row, rows []Row, once *OnceWrite) (again bool, err error) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return true, nil
	}
	lingering := false
	if c.leaders-c.settling < c.p.cfg.MaxInFlight {
		c.leaders++
		// Config.Linger (linger.go): after a statement that carried several callers, lead a batch
		// (queued, as leader) and linger for them; otherwise write at once.
		if lingering = c.company(); !lingering {
			c.mu.Unlock()
			var start time.Time
			if c.p.cfg.Linger > 0 {
				start = time.Now()
			}
			defer c.endTurnTook(start, 1) // even if a callback panics: the queue must not wait for a leader that is gone
			switch {
			case once != nil:
				c.p.batching.record(len(rows), 1)
				return false, c.writeOwn(&waiter{db: db, ctx: session.Context(db), rows: rows, once: once})
			case rows == nil:
				c.p.batching.record(1, 1)
				return false, c.upsert(db, session.Context(db), nil, one)
			}
			c.p.batching.record(len(rows), 1)
			ctx := session.Context(db)
			return false, c.upsert(db, ctx, rows, Row{})
		}
	}
	w := &waiter{db: db, ctx: session.Context(db), once: once, lead: lingering, done: make(chan error, 1)}
	if rows == nil {
		w.one[0] = one
		w.rows = w.one[:]
	} else {
		w.rows = rows
	}
	c.pending = append(c.pending, w)
	c.p.batching.waiting.Add(1)
	c.arrived()
	c.mu.Unlock()
	if lingering {
		return false, c.lead(w)
	}

	select {
	case err := <-w.done:
		if err == errLead {
			return false, c.lead(w)
		}
		return false, c.alone(w, err)
	case <-w.ctx.Done():
	}
	return false, c.leave(w)
}

// leave ends a queued caller's wait when its context ends. Queued, it leaves
// with nothing written. Taken, its delta is in a statement in flight that
// carries other callers' deltas on a context of its own: the caller still
// leaves at its deadline, and its write may land, as a statement of its own
// may commit after its context ends (AddOnce is the retry-safe write).
func (c *coalescer) leave(w *waiter) error {
	c.mu.Lock()
	state := w.state
	if state == waiting {
		c.remove(w)
		w.state = gone
		if w.lead {
			c.handOver()
		}
	}
	c.mu.Unlock()
	if state == taken {
		select {
		case err := <-w.done: // the outcome came with the deadline: it wins
			return c.alone(w, err)
		default:
		}
	}
	return w.ctx.Err()
}

// alone is a caller's outcome of its batch: err, or when the batch
// overflowed (errAlone), its own statement's. Outside the coalescer: rare,
// and it must not wait behind the queue it was taken from.
func (c *coalescer) alone(w *waiter, err error) error {
	if err != errAlone {
		return err
	}
	return c.writeOwn(w)
}

// writeOwn writes w's rows alone, as without coalescing.
func (c *coalescer) writeOwn(w *waiter) error {
	if w.once != nil {
		return c.onceTx(w.db, w.ctx, nil, []*waiter{w})
	}
	if len(w.rows) == 1 {
		return c.upsert(w.db, w.ctx, nil, w.rows[0])
	}
	return c.upsert(w.db, w.ctx, w.rows, Row{})
}

// lead writes the next batch, w's delta first, and hands leadership on. A
// batch of w alone is its own statement, as without coalescing. A batch
// carrying other callers' deltas runs in a goroutine of its own (one per
// statement, not per write), so that w, like every caller in it, can leave
// when its context ends.
func (c *coalescer) lead(w *waiter) error { return c.alone(w, c.leadBatch(w)) }

func (c *coalescer) leadBatch(w *waiter) error {
	c.linger(w)
	c.mu.Lock()
	if err := w.ctx.Err(); err != nil {
		c.remove(w)
		w.state = gone
		c.handOver()
		c.mu.Unlock()
		return err
	}
	rows, batch := c.take(w)
	c.mu.Unlock()

	c.p.batching.record(len(rows), len(batch))
	if len(batch) == 1 {
		defer c.endTurn()
		return c.write(w, rows, batch)
	}
	go c.run(w, rows, batch)
	select {
	case err := <-w.done:
		return outcome(err)
	case <-w.ctx.Done():
		select {
		case err := <-w.done:
			return outcome(err)
		default:
			return w.ctx.Err()
		}
	}
}

// outcome is the leader's result of its batch: a callback's panic goes on in
// its goroutine, as if it had run the statement itself.
func outcome(err error) error {
	if p, ok := err.(leaderPanic); ok {
		panic(p.value)
	}
	return err
}

// leaderPanic carries a callback's panic from the statement's goroutine to
// the leader, which panics with it if it is still waiting.
type leaderPanic struct{ value any }

func (leaderPanic) Error() string { return errLeaderPanicked.Error() }

// run writes a batch of several callers and tells each its outcome. A panic
// in a callback is logged (no caller may be waiting any more, and a panic in
// a goroutine no caller owns would end the process); the leader, if it still
// waits, panics with it, and the others get errLeaderPanicked.
func (c *coalescer) run(w *waiter, rows []Row, batch []*waiter) {
	var err, others error = leaderPanic{}, errLeaderPanicked
	defer func() {
		c.endTurn()
		for _, o := range batch {
			if o == w {
				o.done <- err
			} else {
				o.done <- others
			}
		}
	}()
	finished := false
	defer func() {
		r := recover()
		if r == nil && !finished { // runtime.Goexit in a callback: recover sees nothing
			r = errors.New("slotted: a callback called runtime.Goexit while the coalesced statement ran")
		}
		if r != nil {
			err = leaderPanic{r}
			w.db.Logger.Error(w.ctx, "slotted: a callback panicked in a coalesced statement of %d writes: %v\n%s", len(batch), r, debug.Stack())
		}
	}()
	if err = c.write(w, rows, batch); errors.Is(err, errs.ErrOverflow) {
		err = errAlone
	}
	others, finished = err, true
}

// endTurn ends a leader's turn.
func (c *coalescer) endTurn() {
	c.mu.Lock()
	c.handOver()
	c.mu.Unlock()
}

// write runs one batch. A batch of the leader alone is its own statement on
// its own context, as without coalescing. Otherwise the statement carries
// other callers' writes, so it runs on a context none of them can cancel
// (keeping the leader's values, such as trace spans), bounded by BatchTimeout.
func (c *coalescer) write(w *waiter, rows []Row, batch []*waiter) error {
	if c.p.cfg.Linger > 0 {
		defer func(start time.Time) { c.took(len(batch), time.Since(start)) }(time.Now())
	}
	if len(batch) == 1 {
		return c.writeOwn(w)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), c.p.cfg.BatchTimeout)
	defer cancel()
	SortRows(rows)
	start := batchStart()
	var err error
	if onces := onceWaiters(batch); onces != nil {
		err = c.onceTx(w.db.WithContext(ctx), ctx, rows, onces)
	} else {
		// One statement when the rows are a shape; several in one transaction
		// when multi-row writes left a row of the shape empty or the leader's own
		// write is larger than a shape.
		err = c.upsert(w.db, ctx, rows, Row{})
	}
	return c.p.batchDone(ctx, start, len(rows), len(batch), err)
}

// take moves the next batch out of the queue: the callers of the first
// counters queued, up to the largest statement shape that fits MaxBatch
// (the rest stay queued for the next statement, which starts right after this
// one). Callers whose context has ended are dropped with their context error.
// A caller's rows go into one batch together or wait together: a delta that
// would overflow its row's sum, or rows cut off by the shape, wait for the
// next statement. The leader's own rows are always taken, however many.
func (c *coalescer) take(w *waiter) (rows []Row, batch []*waiter) {
	if c.index == nil {
		c.index, c.onceKinds = map[meta.Ref]int{}, map[[3]tables.Key]bool{}
	}
	clear(c.index)
	clear(c.onceKinds)
	for _, o := range c.pending {
		if o.lead && o != w {
			continue // promoted by another leader's hand-over: it writes a batch of its own
		}
		if o != w { // w checked its own before taking: it is in
			o.expired = o.ctx.Err()
		}
		if o.expired != nil || o.once != nil {
			continue // an AddOnce's rows are summed in only if its key is new (applyOnces)
		}
		if o != w && len(c.index)+c.newRows(o) > c.rowBudget() {
			continue
		}
		for _, r := range o.rows {
			if _, ok := c.index[r.Ref]; !ok {
				c.index[r.Ref] = len(c.index)
			}
		}
	}
	// w is the oldest caller not skipped, indexed first (an AddOnce caller is not indexed).
	k := c.shapeFor(len(c.index))
	if w.once == nil {
		k = max(k, len(w.rows))
	}
	rows = make([]Row, k)
	keys := 0 // AddOnce callers taken
	keep := c.pending[:0]
	for _, o := range c.pending {
		if o.lead && o != w {
			keep = append(keep, o)
			continue
		}
		if o.expired != nil {
			o.state = gone
			o.done <- o.expired
			c.p.batching.waiting.Add(-1)
			continue
		}
		if o.once != nil {
			// An AddOnce and a RemoveOnce of one key go in separate batches,
			// in queue order: a batch inserts its keys before it deletes.
			key, remove := onceKeyOf(&o.once.row), o.once.rowsFor != nil
			if kind, seen := c.onceKinds[key]; (o == w || keys < c.p.cfg.MaxBatch) && (!seen || kind == remove) {
				c.onceKinds[key] = remove
				keys++
				o.state = taken
				batch = append(batch, o)
				c.p.batching.waiting.Add(-1)
				continue
			}
			keep = append(keep, o)
			continue
		}
		if c.fits(o, rows) {
			for _, r := range o.rows {
				x := &rows[c.index[r.Ref]]
				if x.Slots == 0 {
					x.Ref, x.Slots = r.Ref, r.Slots
				}
				x.Delta += r.Delta // fits checked the sum
				x.Slots = min(x.Slots, r.Slots)
			}
			o.state = taken
			batch = append(batch, o)
			c.p.batching.waiting.Add(-1)
			continue
		}
		keep = append(keep, o)
	}
	clear(c.pending[len(keep):])
	c.pending = keep
	// A row stays empty when the caller who indexed it waits (its rows were
	// cut by the shape, or one would overflow): drop it, rows are never padded.
	rows = slices.DeleteFunc(rows, func(r Row) bool { return r.Slots == 0 })
	return rows, batch
}

// onceWaiters are the AddOnce callers of a batch, nil if none.
func onceWaiters(batch []*waiter) []*waiter {
	var out []*waiter
	for _, o := range batch {
		if o.once != nil {
			out = append(out, o)
		}
	}
	return out
}

// newRows counts o's counters not yet in the batch (under mu).
func (c *coalescer) newRows(o *waiter) int {
	n := 0
	for _, r := range o.rows {
		if _, ok := c.index[r.Ref]; !ok {
			n++
		}
	}
	return n
}

// fits reports whether all of o's rows are in the batch's first len(rows)
// rows and add to them without overflowing (under mu).
func (c *coalescer) fits(o *waiter, rows []Row) bool {
	for _, r := range o.rows {
		i, ok := c.index[r.Ref]
		if !ok || i >= len(rows) {
			return false
		}
		if _, ok := MergeDelta(rows[i].Delta, r.Delta); !ok {
			return false
		}
	}
	return true
}

// remove drops a queued caller (under mu).
func (c *coalescer) remove(w *waiter) {
	if i := slices.Index(c.pending, w); i >= 0 {
		c.pending = slices.Delete(c.pending, i, i+1)
		c.p.batching.waiting.Add(-1)
	}
}

// handOver ends a leader's turn (under mu): the oldest queued caller not yet
// promoted leads next in its place, or there is one leader fewer.
func (c *coalescer) handOver() {
	if c.overLent() {
		c.leaders--
		return
	}
	for _, next := range c.pending {
		if !next.lead { // with MaxInFlight > 1 the oldest may have been promoted already
			next.lead = true
			next.done <- errLead
			return
		}
	}
	c.leaders--
	if c.leaders == 0 && c.ephemeral {
		c.dead = true
		c.p.coalescers.CompareAndDelete(c.key, c)
	}
}

// batchStats are the coalescer's counters for Stats.
type batchStats struct {
	batches atomic.Uint64
	writes  atomic.Uint64
	rows    [maxShapes]atomic.Uint64
	waiting atomic.Int64
}

func (s *batchStats) record(rows, writes int) {
	s.batches.Add(1)
	s.writes.Add(uint64(writes))
	s.rows[shapeIndex(max(rows, 1))].Add(1) // a batch of AddOnce keys alone sums its rows in later
}

func (s *batchStats) report(out *Counts) {
	out.Batches, out.BatchedWrites, out.Waiting = s.batches.Load(), s.writes.Load(), s.waiting.Load()
	out.BatchRows = map[int]uint64{}
	for rows := 1; rows <= MaxBatchRows; rows = nextShape(rows) {
		if n := s.rows[shapeIndex(rows)].Load(); n > 0 {
			out.BatchRows[rows] = n
		}
	}
}

func nextShape(rows int) int {
	if rows < 8 {
		return rows + 1
	}
	return rows * 2
}
