package write

import (
	"context"
	"slices"

	"gorm.io/gorm"
)

// Outcome markers for AddOnce/RemoveOnce batches. A batch that carries once
// keys is a transaction (once_batch.go), not one statement, and its COMMIT
// can fail as ambiguously as a statement: the connection breaks after the
// server committed. The key row cannot settle that for its caller: a key
// found present may have been inserted by an earlier call with the same key,
// and AddOnce reports whether THIS call applied it. So the transaction moves
// an outcome marker too, in its counters' upsert (always written, even when
// no key was new, so that the marker tells whether the transaction
// committed whatever it held), and an ambiguous error is settled the way a
// coalesced statement's is (outcome.go): committed, the callers get the
// outcome the transaction computed (applied or not); not committed, their
// error, which then means nothing was written for any of them.

// onceTx writes a batch of once callers and the other callers' rows (summed)
// in one transaction on db (whose context is ctx), through a marker when the
// coalescer's statements carry one.
func (c *coalescer) onceTx(db *gorm.DB, ctx context.Context, rows []Row, onces []*waiter) error {
	if !c.marked() {
		return c.p.sessions.WriteTx(db, func(tx *gorm.DB) error { return c.p.ApplyOnces(tx, rows, onces) })
	}
	m := c.marker(db, ctx)
	withMarker := append(slices.Clip(rows), m.row()) // applyOnces clones and sums: written in its upsert
	err := c.p.sessions.WriteTx(db, func(tx *gorm.DB) error { return c.p.ApplyOnces(tx, withMarker, onces) })
	err = c.p.settled(db, ctx, m, err, false, c)
	c.release(db, ctx, m, err)
	return err
}
