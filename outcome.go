package slotted

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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

// MarkerType is the record type of the plugin's outcome markers (see
// docs/outcomes.md); it is reserved: do not name a counter so.
const MarkerType = "slotted:outcome"

// marker is one outcome marker: its row and how many statements through it
// landed. Its owner uses it for one statement at a time.
type marker struct {
	ref Ref
	seq int64 // statements through it known to have committed (the row's count)
}

// newMarker names a marker no one else uses: 128 random bits.
func newMarker() *marker {
	return &marker{ref: Ref{Type: MarkerType, ID: fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())}}
}

// row is the marker's +1, to be written by the statement it settles.
func (m *marker) row() batchRow { return batchRow{ref: m.ref, slots: 1, delta: 1} }

// definite reports whether err, a statement's error, says for sure that the
// statement did not commit: the server refused it (overflow, a lock conflict
// that rolled it back) or it never left (bad input). Anything else — a broken
// connection, a context that ended, an error the plugin cannot classify — is
// settled by the marker.
func definite(err error) bool {
	return errors.Is(err, ErrOverflow) || ConflictOf(err) != NoConflict
}

// errUnsettled: the marker could not be read, so whether the statement
// committed is unknown for now.
var errUnsettled = errors.New("slotted: the outcome of a statement whose connection failed is not known yet")

// markerWait bounds the reads that settle one statement's outcome.
const markerWait = 10 * time.Second

// settle reports whether the statement written through m committed, after it
// returned err. landed=true moves m on. It reads the marker on db's primary
// with ctx's values but not its end (the statement's caller may have left):
// for up to wait, retrying a read that fails. It fails with errUnsettled when
// no read answered, and with an error when the row holds neither seq nor
// seq+1 (someone wrote it).
func (p *Plugin) settle(db *gorm.DB, ctx context.Context, m *marker, wait time.Duration) (landed bool, err error) {
	if dl, ok := ctx.Deadline(); ok { // a caller with a deadline waits at most a second past it
		wait = min(wait, max(time.Until(dl), 0)+time.Second)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	for attempt := 0; ; attempt++ {
		n, err := p.markerCount(db.WithContext(rctx), m.ref)
		if err == nil {
			switch n {
			case m.seq + 1:
				m.seq++
				return true, nil
			case m.seq:
				return false, nil
			}
			return false, fmt.Errorf("slotted: outcome marker %s holds %d, expected %d or %d: it was written by something else", m.ref.ID, n, m.seq, m.seq+1)
		}
		select {
		case <-rctx.Done():
			return false, fmt.Errorf("%w: %w", errUnsettled, err)
		case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, time.Second)):
		}
	}
}

// markerCount reads a marker's count (0 when it has no row yet) with a
// locking read on the primary.
func (p *Plugin) markerCount(db *gorm.DB, ref Ref) (int64, error) {
	var counts []int64
	q := primary(db, p.cfg.Table).Table(p.cfg.Table).
		Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: ref.Type}).
		Where(clause.Eq{Column: clause.Column{Name: "record_id"}, Value: ref.ID}).
		Where(clause.Eq{Column: clause.Column{Name: "slot"}, Value: 0})
	if p.dialect.lockingReads {
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

// dropMarker deletes a marker's row (its owner is done with it).
func (p *Plugin) dropMarker(db *gorm.DB, ref Ref) error {
	return primary(db, p.cfg.Table).Table(p.cfg.Table).
		Where(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: ref.Type}).
		Where(clause.Eq{Column: clause.Column{Name: "record_id"}, Value: ref.ID}).
		Delete(&SlottedCounter{}).Error
}

// upsertMarked writes rows (sorted, distinct counters; with the marker's row a
// shape) and the marker's +1 in one statement, retried on lock conflicts, and
// settles an error that leaves the outcome open: nil when the statement
// committed, its error when it did not, errUnsettled (wrapped) when the
// marker could not be read.
func (p *Plugin) upsertMarked(db *gorm.DB, pool gorm.ConnPool, ctx context.Context, m *marker, rows []batchRow) error {
	all := make([]batchRow, 0, len(rows)+1)
	all = append(append(all, rows...), m.row())
	sortRows(all)
	err := p.upsertRows(db, pool, ctx, false, all)
	if err == nil {
		m.seq++
		return nil
	}
	if definite(err) {
		return err
	}
	landed, serr := p.settle(db, ctx, m, markerWait)
	switch {
	case serr != nil:
		return fmt.Errorf("%w (the statement failed with: %w)", serr, err)
	case landed:
		p.stats.settledLanded.Add(1)
		return nil
	}
	p.stats.settledLost.Add(1)
	return err
}

// markedShape is how many counter rows go with a marker's row in one
// statement for n pending rows (n >= 1): a shape less one.
func markedShape(n int) int { return shapeFloor(min(n+1, maxBatchRows)) - 1 }
