package slotted

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/write"
)

// Write-behind: for counters where speed matters more than durability (page
// views), a Buffer takes deltas in memory, sums them per counter and writes
// them in the background, every Interval and whenever FlushAt counters are
// pending, with the multi-row upserts coalescing uses. Add returns at once.
//
// What a crash loses: every delta added since the last successful flush (at
// most Interval's worth, or FlushAt counters' worth), and nothing else. A
// failed flush keeps its deltas and retries them on the next one; they are
// never dropped, but for a delta that would take its counter past int64: that
// one is refused as Add refuses it (ErrOverflow, Stats.Overflowed), and the
// rest of the flush is written. Write-behind is exactly once: each flush
// statement also moves the Buffer's outcome marker (outcome.go), so a
// statement whose error leaves its outcome open (the connection dropped after
// the server received it) is looked up before anything is written again: one
// that committed is not applied again, one that did not is retried. While the
// marker cannot be read its deltas are held, neither retried nor dropped, and
// the next flush looks again.

var (
	// ErrBufferFull: the Buffer already holds MaxPending counters (their flushes are failing or slower
	// than the writes), so a delta to another counter is refused. Deltas to counters already pending
	// are still taken.
	ErrBufferFull = errors.New("slotted: write-behind buffer full")
	// ErrBufferClosed: Add after Close.
	ErrBufferClosed = errors.New("slotted: write-behind buffer closed")
)

// BufferOptions configure a Buffer. Zero values take the defaults.
type BufferOptions struct {
	// Interval between background flushes. Default: 1s.
	Interval time.Duration
	// FlushAt starts a flush early when this many counters are pending. Default: 1024.
	FlushAt int
	// MaxPending bounds the counters held in memory, a flush in progress included: Add to a counter
	// not already pending fails with ErrBufferFull while this many are held. Default: 100000.
	MaxPending int
	// FlushTimeout bounds one background flush. Default: 30s.
	FlushTimeout time.Duration
	// OnError is called with each failed background flush's error (its deltas stay pending).
	// Default: the DB's logger.
	OnError func(error)
}

// BufferStats are a Buffer's metrics.
type BufferStats struct {
	Pending       int    // counters held in memory: with deltas not yet written, or in a flush in progress
	PendingWrites int64  // Add calls not yet written
	Flushes       uint64 // flushes that wrote every delta they took (but those refused for overflow)
	FlushErrors   uint64 // flushes that failed; their deltas went back to pending
	Written       uint64 // Add calls written
	Rows          uint64 // counter rows written (one per counter per flush)
	Overflowed    uint64 // Add calls refused because their delta would take the counter past int64 (ErrOverflow)
	LastError     error  // the last flush error, nil after a flush succeeds
}

// Buffer is a write-behind buffer for one *gorm.DB; create it with NewBuffer
// and Close it on shutdown. It is safe for concurrent use.
type Buffer struct {
	p    *Plugin
	db   *gorm.DB
	opts BufferOptions

	mu       sync.Mutex
	pending  map[Ref]*bufEntry
	carry    []bufEntry // deltas that went back after a failed flush but would overflow their counter's new sum
	inflight struct {
		refs    map[Ref]struct{} // counters taken by the flush in progress, until it ends
		overlap int              // pending counters that are in refs too (held once for the bound)
		writes  int64            // Add calls it carries, not yet written
	}
	closed  bool
	lastErr error

	marker     *write.Marker // moved by each flush statement (outcome.go); used under flushing
	markerGone bool          // retired: its row deleted after Close (under mu)
	doubt      []bufDoubt    // rows of flush statements whose outcome is not known yet; under flushing and mu

	flushing sync.Mutex // one flush at a time
	kick     chan struct{}
	stop     chan struct{}
	stopped  chan struct{}

	flushes, flushErrors, written, rows, overflowed atomic.Uint64
}

// bufDoubt is a flush statement's rows whose outcome the marker has not told yet.
type bufDoubt struct {
	rows   []write.Row
	writes []int64
}

type bufEntry struct {
	ref    Ref
	slots  int
	delta  int64
	writes int64
}

// NewBuffer starts a write-behind buffer writing through db (its routing; not
// a transaction). Call Close to flush and stop it.
//
//	buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: time.Second})
//	defer buf.Close(context.Background())
//	buf.Add(&post, "views", 1) // returns at once; written within a second
func NewBuffer(db *gorm.DB, opts ...BufferOptions) (*Buffer, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	p, err := liveOf(db)
	if err != nil {
		return nil, err
	}
	if session.InTx(db) {
		return nil, fmt.Errorf("%w: a write-behind buffer outlives transactions; pass the DB", ErrInvalidConfig)
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.FlushAt == 0 {
		o.FlushAt = 1024
	}
	if o.MaxPending == 0 {
		o.MaxPending = 100_000
	}
	if o.FlushTimeout == 0 {
		o.FlushTimeout = 30 * time.Second
	}
	if o.Interval < 0 || o.FlushAt < 1 || o.MaxPending < 1 || o.FlushTimeout < 0 {
		return nil, fmt.Errorf("%w: BufferOptions %+v", ErrInvalidConfig, o)
	}
	if o.OnError == nil {
		log := db.Logger
		o.OnError = func(err error) { log.Error(context.Background(), "slotted: write-behind flush: %v", err) }
	}
	b := &Buffer{
		p: p, db: db.Session(&gorm.Session{Context: context.Background()}), opts: o,
		pending: map[Ref]*bufEntry{}, marker: write.NewMarkerAt(write.MarkerNow()),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	go b.loop()
	return b, nil
}

// Add takes delta for a counter of model (see slotted.Add) and returns at
// once; the model's field moves by delta now, the database on the next flush.
func (b *Buffer) Add(model any, counter string, delta int64) error {
	c, v, id, err := b.p.writeTarget(b.db, model, counter)
	if err != nil {
		return err
	}
	if delta == 0 {
		return nil
	}
	// The bucket is the one holding this instant, however late the flush.
	var rows [2]write.Row
	if err := b.add(write.RowsOf(rows[:0], c, id, delta, b.p.cfg.Now())); err != nil {
		return err
	}
	c.Add(v, delta)
	return nil
}

// AddRef takes delta for the counter named by ref (Config.Slots slots).
func (b *Buffer) AddRef(ref Ref, delta int64) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if delta == 0 {
		return nil
	}
	return b.add([]write.Row{{Ref: ref, Slots: b.p.cfg.Slots, Delta: delta}})
}

// add takes one write's rows (distinct counters), all or none. The write is
// counted once, on its first row (the total's).
func (b *Buffer) add(rows []write.Row) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrBufferClosed
	}
	fresh := 0
	for _, r := range rows {
		if e, ok := b.pending[r.Ref]; ok {
			if _, ok := write.MergeDelta(e.delta, r.Delta); !ok {
				return fmt.Errorf("%w: counter %s/%s; Flush first", ErrDeltaOverflow, r.Ref.Type, r.Ref.ID)
			}
		} else if _, flushing := b.inflight.refs[r.Ref]; !flushing {
			fresh++
		}
	}
	if held := b.held(); fresh > 0 && held+fresh > b.opts.MaxPending {
		b.signal()
		return fmt.Errorf("%w: %d counters pending", ErrBufferFull, held)
	}
	for i, r := range rows {
		e, ok := b.pending[r.Ref]
		if !ok {
			e = &bufEntry{ref: r.Ref, slots: r.Slots}
			b.pending[r.Ref] = e
			if _, flushing := b.inflight.refs[r.Ref]; flushing {
				b.inflight.overlap++
			}
		}
		e.delta += r.Delta // checked above
		e.slots = min(e.slots, r.Slots)
		if i == 0 {
			e.writes++
		}
	}
	if len(b.pending) >= b.opts.FlushAt {
		b.signal()
	}
	return nil
}

// held is the number of distinct counters in memory (under mu).
func (b *Buffer) held() int {
	n := len(b.pending) + len(b.carry) + len(b.inflight.refs) - b.inflight.overlap
	for _, d := range b.doubt {
		n += len(d.rows)
	}
	return n
}

func (b *Buffer) signal() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *Buffer) loop() {
	defer close(b.stopped)
	t := time.NewTicker(b.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.opts.FlushTimeout)
		if err := b.Flush(ctx); err != nil {
			b.opts.OnError(err)
		}
		cancel()
	}
}

// Flush writes every pending delta now, one multi-row upsert per up to 1024
// counters, each statement on its own (retried on lock conflicts). On an error
// the deltas not written go back to pending for the next flush, but for a
// delta refused for overflow (ErrOverflow): that one is dropped.
func (b *Buffer) Flush(ctx context.Context) error {
	b.flushing.Lock()
	defer b.flushing.Unlock()
	if err := b.settleDoubt(ctx); err != nil {
		return err
	}
	b.renewMarker(ctx) // nothing in doubt: no statement is left to read the old one (marker_prune.go)
	b.mu.Lock()
	rows := make([]write.Row, 0, len(b.pending)+len(b.carry))
	var writes []int64
	for _, e := range b.pending {
		rows = append(rows, write.Row{Ref: e.ref, Slots: e.slots, Delta: e.delta})
	}
	write.SortRows(rows)
	writes = make([]int64, 0, len(rows)+len(b.carry))
	for _, r := range rows {
		writes = append(writes, b.pending[r.Ref].writes)
	}
	carry := b.carry // each carried row goes alone: its counter may be in rows too
	b.pending, b.carry = map[Ref]*bufEntry{}, nil
	b.inflight.refs = make(map[Ref]struct{}, len(rows)+len(carry))
	for _, r := range rows {
		b.inflight.refs[r.Ref] = struct{}{}
	}
	for _, e := range carry {
		b.inflight.refs[e.ref] = struct{}{}
	}
	for _, w := range writes {
		b.inflight.writes += w
	}
	for _, e := range carry {
		b.inflight.writes += e.writes
	}
	b.mu.Unlock()

	db := b.db.WithContext(ctx)
	pool, _ := b.p.sessions.Pool(db)
	done, kept := 0, 0 // rows and carried rows written (or refused for overflow)
	var overflows []error
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil { // a callback's panic: keep the deltas, report it as the flush's error
				err = fmt.Errorf("slotted: write-behind flush: a callback panicked: %v", r)
			}
		}()
		for err == nil && done < len(rows) {
			n := write.MarkedShape(len(rows) - done)
			switch err = b.p.writes.UpsertMarked(db, pool, ctx, b.marker, rows[done:done+n]); {
			case err == nil:
				b.wrote(n, writes[done:done+n]...)
				done += n
			case errors.Is(err, write.ErrUnsettled):
				b.held_(rows[done:done+n], writes[done:done+n])
				done += n
			case errors.Is(err, ErrOverflow):
				// One counter's overflow failed a statement that wrote nothing:
				// this chunk goes row by row, so only that counter is refused.
				err = nil
				for end := done + n; err == nil && done < end; done++ {
					err = b.writeOne(db, pool, ctx, rows[done], writes[done], &overflows)
				}
				if err != nil && !errors.Is(err, write.ErrUnsettled) {
					done-- // the row that failed goes back
				}
			}
		}
		for err == nil && kept < len(carry) {
			e := carry[kept]
			if err = b.writeOne(db, pool, ctx, write.Row{Ref: e.ref, Slots: e.slots, Delta: e.delta}, e.writes, &overflows); err == nil {
				kept++
			}
		}
		return err
	}()
	refused := errors.Join(overflows...) // nil when none

	if err == nil {
		defer b.retire(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inflight.refs, b.inflight.overlap, b.inflight.writes = nil, 0, 0
	if err == nil {
		b.lastErr = refused // nil, or the refused deltas' ErrOverflow: everything else was written
		b.flushes.Add(1)
		return refused
	}
	for i := done; i < len(rows); i++ {
		b.putBack(bufEntry{ref: rows[i].Ref, slots: rows[i].Slots, delta: rows[i].Delta, writes: writes[i]})
	}
	for _, e := range carry[kept:] {
		b.putBack(e)
	}
	b.lastErr = errors.Join(fmt.Errorf("slotted: write-behind flush (%d counters kept for the next one): %w", len(rows)-done+len(carry)-kept, err), refused)
	b.flushErrors.Add(1)
	return b.lastErr
}

// writeOne writes one counter's delta alone. A delta that would take its
// counter past int64 is refused, as Add refuses it: reported with ErrOverflow
// and dropped, since retrying it can only fail again and it would hold back
// every counter flushed with it.
func (b *Buffer) writeOne(db *gorm.DB, pool gorm.ConnPool, ctx context.Context, row write.Row, writes int64, overflows *[]error) error {
	err := b.p.writes.UpsertMarked(db, pool, ctx, b.marker, []write.Row{row})
	switch {
	case err == nil:
		b.wrote(1, writes)
	case errors.Is(err, write.ErrUnsettled):
		b.held_([]write.Row{row}, []int64{writes})
	case errors.Is(err, ErrOverflow):
		b.overflowed.Add(uint64(writes))
		b.mu.Lock()
		b.inflight.writes -= writes
		b.mu.Unlock()
		*overflows = append(*overflows, fmt.Errorf("slotted: write-behind: %+d to %s/%s from %d Add calls refused: %w", row.Delta, row.Ref.Type, row.Ref.ID, writes, err))
		return nil
	}
	return err
}

// putBack returns an unwritten delta to pending (under mu).
func (b *Buffer) putBack(e bufEntry) {
	cur, ok := b.pending[e.ref]
	if !ok {
		b.pending[e.ref] = &e
		return
	}
	if sum, ok := write.MergeDelta(cur.delta, e.delta); ok {
		cur.delta, cur.writes, cur.slots = sum, cur.writes+e.writes, min(cur.slots, e.slots)
		return
	}
	b.carry = append(b.carry, e)
}

// wrote records a statement that wrote rows counters carrying writes Add calls.
func (b *Buffer) wrote(rows int, writes ...int64) {
	var n int64
	for _, w := range writes {
		n += w
	}
	b.written.Add(uint64(n))
	b.rows.Add(uint64(rows))
	b.mu.Lock()
	b.inflight.writes -= n
	b.mu.Unlock()
}

// Close stops the background flushes, refuses further Adds, and flushes what
// is pending. If that flush fails its error is returned and the deltas stay
// pending: call Flush again to retry them (Stats shows how many remain).
func (b *Buffer) Close(ctx context.Context) error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stop)
	}
	b.mu.Unlock()
	<-b.stopped
	return b.Flush(ctx) // after Close, a Flush that leaves nothing behind drops the marker (retire)
}

// retire (under flushing, after a flush that wrote everything) drops the
// marker once the Buffer is closed and holds nothing: no statement will go
// through it again. A row left behind (this failed, or the process died) is
// one row, read by nothing; a later Flush tries again.
func (b *Buffer) retire(ctx context.Context) {
	b.mu.Lock()
	done := b.closed && len(b.pending) == 0 && len(b.carry) == 0 && len(b.doubt) == 0 && !b.markerGone
	b.mu.Unlock()
	if !done {
		return
	}
	for attempt := 0; attempt < 3; attempt++ { // a pooled connection may be dead: the next one is not
		if b.p.writes.DropMarker(b.db.WithContext(ctx), b.marker.Ref) == nil {
			b.mu.Lock()
			b.markerGone = true
			b.mu.Unlock()
			return
		}
	}
}

// Stats returns the buffer's metrics.
func (b *Buffer) Stats() BufferStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BufferStats{
		Pending: b.held(), PendingWrites: b.inflight.writes,
		Flushes: b.flushes.Load(), FlushErrors: b.flushErrors.Load(), Written: b.written.Load(), Rows: b.rows.Load(), Overflowed: b.overflowed.Load(),
		LastError: b.lastErr,
	}
	for _, e := range b.pending {
		s.PendingWrites += e.writes
	}
	for _, e := range b.carry {
		s.PendingWrites += e.writes
	}
	for _, d := range b.doubt {
		for _, w := range d.writes {
			s.PendingWrites += w
		}
	}
	return s
}

// held_ keeps a flush statement's rows whose outcome its marker could not
// tell yet (under flushing): they are neither pending (retrying them could
// count them twice) nor written (they may not be).
func (b *Buffer) held_(rows []write.Row, writes []int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.doubt = append(b.doubt, bufDoubt{rows: slices.Clone(rows), writes: slices.Clone(writes)})
}

// settleDoubt (under flushing) reads the marker for the statement held in
// doubt: rows that committed are counted as written, the others go back to
// pending. Only the last statement can be in doubt (a flush stops at it), so
// one read settles it.
func (b *Buffer) settleDoubt(ctx context.Context) error {
	if len(b.doubt) == 0 {
		return nil
	}
	d := b.doubt[len(b.doubt)-1]
	landed, err := b.p.writes.Settle(b.db.WithContext(ctx), ctx, b.marker, write.MarkerWait)
	if err != nil {
		b.mu.Lock()
		b.lastErr = fmt.Errorf("slotted: write-behind flush: %w", err)
		b.flushErrors.Add(1)
		b.mu.Unlock()
		return b.lastErr
	}
	b.mu.Lock()
	b.doubt = nil
	if !landed {
		for i, r := range d.rows {
			b.putBack(bufEntry{ref: r.Ref, slots: r.Slots, delta: r.Delta, writes: d.writes[i]})
		}
	}
	b.mu.Unlock()
	if landed {
		b.p.writes.CountSettled(true)
		b.wroteSettled(len(d.rows), d.writes)
	} else {
		b.p.writes.CountSettled(false)
	}
	return nil
}

// wroteSettled records rows found written by a later settle: they were not
// in flight any more, so inflight.writes is left alone.
func (b *Buffer) wroteSettled(rows int, writes []int64) {
	var n int64
	for _, w := range writes {
		n += w
	}
	b.written.Add(uint64(n))
	b.rows.Add(uint64(rows))
}

// renewMarker (a Buffer's, under flushing with nothing in doubt) replaces the
// Buffer's marker once it is older than write.MarkerLife, deleting the old one's
// row (left to pruneMarkers if that fails).
func (b *Buffer) renewMarker(ctx context.Context) {
	now := write.MarkerNow()
	if now.Sub(b.marker.Born) < write.MarkerLife {
		return
	}
	old := b.marker
	b.marker = write.NewMarkerAt(now)
	_ = b.p.writes.DropMarker(b.db.WithContext(ctx), old.Ref)
}
