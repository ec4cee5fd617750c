package write

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/tables"
)

// Outcome markers. A statement whose connection breaks (killed, reset, EOF
// after the statement was sent) may have committed or not, and the driver
// cannot say which: on MariaDB most such statements had committed. Retrying
// counts them twice, dropping them loses them. A marker settles it: a row of
// the counter table, under the reserved record type MarkerType, that the
// statement itself moves by +1 along with its counter rows (one multi-row
// upsert, atomic). Its owner writes through it one statement at a time and
// knows how many landed (seq), so after an error one read of the row tells:
// seq+1, the statement committed; seq, it did not.
//
// The read is a locking read on the primary, on another connection: if the
// statement is still running on the server (its connection died, not its
// thread) the read waits for its COMMIT or ROLLBACK, so it reads the outcome,
// not a moment before it. A marker row is one slot row (slot 0) whose count is
// a sequence number: every read of the counter table names its record types,
// so none reads a marker; CompactAll skips counters of one row.

// MarkerType is the record type of the plugin's outcome markers
// (slotted.MarkerType); it is reserved.
const MarkerType = "slotted:outcome"

// Marker is one outcome Marker: its row and how many statements through it
// landed. Its owner uses it for one statement at a time.
type Marker struct {
	Ref  meta.Ref
	seq  int64     // statements through it known to have committed (the row's count)
	Born time.Time // in its ID too: its age decides when it is retired and its row pruned (marker_prune.go)
}

// row is the marker's +1, to be written by the statement it settles.
func (m *Marker) row() Row { return Row{Ref: m.Ref, Slots: 1, Delta: 1} }

// definite reports whether err, a statement's error, says for sure that the
// statement did not commit: the server refused it (overflow, a lock conflict
// that rolled it back) or it never left (bad input). Anything else — a broken
// connection, a context that ended, an error the plugin cannot classify — is
// settled by the marker.
func definite(err error) bool {
	return errors.Is(err, errs.ErrOverflow) || session.ConflictOf(err) != session.NoConflict
}

// ErrUnsettled: the marker could not be read, so whether the statement
// committed is unknown for now.
var ErrUnsettled = errs.ErrOutcomeUnknown

// MarkerWait bounds the reads that settle one statement's outcome.
const MarkerWait = 10 * time.Second

// Settle reports whether the statement written through m committed, after it
// returned err. landed=true moves m on. It reads the marker on db's primary
// with ctx's values but not its end (the statement's caller may have left):
// for up to wait, retrying a read that fails. It fails with errUnsettled when
// no read answered, and with an error when the row holds neither seq nor
// seq+1 (someone wrote it).
func (p *Engine) Settle(db *gorm.DB, ctx context.Context, m *Marker, wait time.Duration) (landed bool, err error) {
	if dl, ok := ctx.Deadline(); ok { // a caller with a deadline waits at most a second past it
		wait = min(wait, max(time.Until(dl), 0)+time.Second)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	for attempt := 0; ; attempt++ {
		n, err := p.markerCount(db.WithContext(rctx), m.Ref)
		if err == nil {
			switch n {
			case m.seq + 1:
				m.seq++
				return true, nil
			case m.seq:
				return false, nil
			}
			return false, fmt.Errorf("slotted: outcome marker %s holds %d, expected %d or %d: it was written by something else", m.Ref.ID, n, m.seq, m.seq+1)
		}
		select {
		case <-rctx.Done():
			return false, fmt.Errorf("%w: %w", ErrUnsettled, err)
		case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, time.Second)):
		}
	}
}

// markerCount reads a marker's count (0 when it has no row yet) with a
// locking read on the primary.
func (p *Engine) markerCount(db *gorm.DB, ref meta.Ref) (int64, error) {
	var counts []int64
	q := session.Primary(db, p.cfg.Table).Table(p.cfg.Table).
		Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: ref.Type}).
		Where(clause.Eq{Column: clause.Column{Name: "record_id"}, Value: ref.ID}).
		Where(clause.Eq{Column: clause.Column{Name: "slot"}, Value: 0})
	if p.dialect.LockingReads {
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	if err := q.Pluck("count", &counts).Error; err != nil {
		return 0, err
	}
	if len(counts) == 0 {
		return 0, nil
	}
	return counts[0], nil
}

// DropMarker deletes a marker's row (its owner is done with it).
func (p *Engine) DropMarker(db *gorm.DB, ref meta.Ref) error {
	return session.Primary(db, p.cfg.Table).Table(p.cfg.Table).
		Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: ref.Type}).
		Where(clause.Eq{Column: clause.Column{Name: "record_id"}, Value: ref.ID}).
		Delete(&tables.Counter{}).Error
}

// UpsertMarked writes rows (sorted, distinct counters; with the marker's row a
// shape) and the marker's +1 in one statement, retried on lock conflicts, and
// settles an error that leaves the outcome open: nil when the statement
// committed, its error when it did not, errUnsettled (wrapped) when the
// marker could not be read.
func (p *Engine) UpsertMarked(db *gorm.DB, pool gorm.ConnPool, ctx context.Context, m *Marker, rows []Row) error {
	return p.upsertMarkedAt(db, pool, ctx, m, rows, true, nil)
}

// upsertMarkedAt is upsertMarked; settleContext false leaves a statement cut
// short by ctx unsettled (its ctx error returned): its caller left. A
// coalescer's statement (c) lends its slot while its outcome is looked up.
func (p *Engine) upsertMarkedAt(db *gorm.DB, pool gorm.ConnPool, ctx context.Context, m *Marker, rows []Row, settleContext bool, c *coalescer) error {
	all := make([]Row, 0, len(rows)+1)
	all = append(append(all, rows...), m.row())
	SortRows(all)
	return p.settled(db, ctx, m, p.UpsertRows(db, pool, ctx, false, all), settleContext, c)
}

// settled turns the error of a statement or transaction written through m
// into its outcome: nil when it committed, its error when it did not,
// errUnsettled (wrapped) when the marker could not be read. A statement cut
// short by ctx is left unsettled when settleContext is false (its caller
// left). With c set, the lookup lends its statement slot (lend).
func (p *Engine) settled(db *gorm.DB, ctx context.Context, m *Marker, err error, settleContext bool, c *coalescer) error {
	if err == nil {
		m.seq++
		return nil
	}
	if definite(err) {
		return err
	}
	if cerr := ctx.Err(); !settleContext && cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		// The connection's error came first, the context ended before the
		// lookup: the caller gets its context's error, as the outcome is
		// unknown (returned alone, err would say "not counted").
		return fmt.Errorf("%w (the statement's outcome is unknown: it failed with: %w)", cerr, err)
	}
	if c != nil {
		defer c.lend()()
	}
	landed, serr := p.Settle(db, ctx, m, MarkerWait)
	switch {
	case serr != nil:
		return fmt.Errorf("%w (the statement failed with: %w)", serr, err)
	case landed:
		p.CountSettled(true)
		return nil
	}
	p.CountSettled(false)
	return err
}

// release ends a coalesced statement's use of its marker, after its outcome
// err: back to the pool when its count is known; retired when a context cut
// the statement short (its row deleted once the statement cannot be running
// any more) or the marker could not be read (its row is left to
// pruneMarkers).
func (c *coalescer) release(db *gorm.DB, ctx context.Context, m *Marker, err error) {
	switch {
	case err == nil, definite(err):
		c.markers.put(m)
	case ctx.Err() != nil && !errors.Is(err, ErrUnsettled):
		p, ref := c.p, m.Ref
		time.AfterFunc(c.p.cfg.BatchTimeout+MarkerWait, func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MarkerWait)
			defer cancel()
			_ = p.DropMarker(db.WithContext(rctx), ref)
		})
	case errors.Is(err, ErrUnsettled):
		// Its count is unknown: retired, its row left (one row).
	default:
		c.markers.put(m) // settled: not landed, count known
	}
}

// MarkedShape is how many counter rows go with a marker's row in one
// statement for n pending rows (n >= 1): a shape less one.
func MarkedShape(n int) int { return ShapeFloor(min(n+1, MaxBatchRows)) - 1 }

// markerPool holds a coalescer's markers between statements: one per
// statement in flight, reused, so their rows stay as many as MaxInFlight.
type markerPool struct {
	mu   sync.Mutex
	free []*Marker
}

// get takes a marker made less than MarkerLife before now, or a new one;
// stale are the older ones it found, retired (their rows to be deleted).
func (mp *markerPool) get(now time.Time) (m *Marker, stale []*Marker) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	for n := len(mp.free); n > 0; n-- {
		m := mp.free[n-1]
		mp.free = mp.free[:n-1]
		if now.Sub(m.Born) < MarkerLife {
			return m, stale
		}
		stale = append(stale, m)
	}
	return NewMarkerAt(now), stale
}

func (mp *markerPool) put(m *Marker) {
	mp.mu.Lock()
	mp.free = append(mp.free, m)
	mp.mu.Unlock()
}

// marked reports whether the coalescer's statements carry a marker:
// Config.OutcomeMarkers, on a server. SQLite has no connection to lose: its
// errors are the statement's own.
func (c *coalescer) marked() bool { return c.p.cfg.OutcomeMarkers && c.p.dialect.Markers }

// rowBudget is how many counter rows a coalesced statement takes: MaxBatch,
// less the marker's row (Config.OutcomeMarkers).
func (c *coalescer) rowBudget() int {
	if !c.marked() {
		return c.p.cfg.MaxBatch
	}
	return max(c.p.cfg.MaxBatch-1, 1)
}

// shapeFor is how many of n counter rows a coalesced statement writes, so
// that with the marker's row they make a statement shape.
func (c *coalescer) shapeFor(n int) int {
	if !c.marked() {
		return ShapeFloor(min(n, MaxBatchRows))
	}
	return MarkedShape(n)
}

// upsert is every coalesced statement: rows (sorted, distinct counters), or
// one row when rows is nil, and with Config.OutcomeMarkers the marker's +1. An error that leaves the
// outcome open is settled (upsertMarked): the callers get nil when it
// committed, its error when it did not. A statement cut short by its context
// is not settled, as its caller left: its marker is retired (its count is
// unknown now) and its row deleted once the statement cannot be running.
func (c *coalescer) upsert(db *gorm.DB, ctx context.Context, rows []Row, one Row) error {
	if !c.marked() {
		if rows == nil {
			return c.p.UpsertOne(db, c.key.pool, false, one.Ref.Type, one.Ref.ID, one.Slots, one.Delta)
		}
		return c.p.UpsertRows(db, c.key.pool, ctx, false, rows)
	}
	if rows == nil {
		rows = []Row{one}
	}
	m := c.marker(db, ctx)
	err := c.p.upsertMarkedAt(db, c.key.pool, ctx, m, rows, false, c)
	c.release(db, ctx, m, err)
	return err
}
