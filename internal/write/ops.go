package write

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted/internal/errs"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/tables"
)

// AddOne writes delta to a counter: through the coalescer (coalesce.go) outside
// a transaction, else directly.
func (p *Engine) AddOne(db *gorm.DB, recordType, recordID string, slots int, delta int64) error {
	if delta == 0 {
		return nil
	}
	pool, inTx := p.sessions.Pool(db)
	if c := p.CoalescerFor(db, pool, inTx); c != nil {
		return p.Coalesce(db, c, meta.Ref{Type: recordType, ID: recordID}, slots, delta)
	}
	return p.UpsertOne(db, pool, inTx, recordType, recordID, slots, delta)
}

// UpsertOne runs the upsert. It is the hot path: no reflection, no statement
// building, no parsing of the SQL; one statement allocation per attempt.
func (p *Engine) UpsertOne(db *gorm.DB, pool gorm.ConnPool, inTx bool, recordType, recordID string, slots int, delta int64) error {
	ctx := session.Context(db)
	return tables.Overflowed(p.sessions.Retry.Do(ctx, inTx, func(ctx context.Context) error {
		// A fresh slot on each attempt: the one that conflicted is the hottest.
		vals := Args(p.sql.UpsertArgs, recordType, recordID, rand.IntN(slots), delta)
		return ExecRendered(db, pool, ctx, p.sql.Upsert, vals).Error
	}))
}

// UpsertRows writes rows (sorted by key, each counter once) with one statement
// per shape: one statement when len(rows) is a shape. Outside a transaction a
// single statement is retried on lock conflicts, and several run in a write
// transaction retried as a whole, so the rows are written all or none.
func (p *Engine) UpsertRows(db *gorm.DB, pool gorm.ConnPool, ctx context.Context, inTx bool, rows []Row) error {
	if ShapeFloor(min(len(rows), MaxBatchRows)) == len(rows) {
		return p.sessions.Retry.Do(ctx, inTx, func(ctx context.Context) error { return p.ExecRows(db, pool, ctx, rows) })
	}
	run := func(tx *gorm.DB) error {
		pool, ctx := tx.Statement.ConnPool, session.Context(tx)
		for rest := rows; len(rest) > 0; {
			n := ShapeFloor(min(len(rest), MaxBatchRows))
			if err := p.ExecRows(tx, pool, ctx, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	}
	if inTx {
		return run(db)
	}
	return p.sessions.WriteTx(db.WithContext(ctx), run)
}

// AddOnceRows inserts the key and, only if it was new (or expired), adds rows:
// coalesced with other writes outside a transaction (once_batch.go), in the
// caller's transaction with the same statements inside one. The key is kept
// for ttl (0: forever).
func (p *Engine) AddOnceRows(db *gorm.DB, ref meta.Ref, rows []Row, delta int64, key string, ttl time.Duration) (applied bool, err error) {
	w := &OnceWrite{row: tables.Once{RecordType: tables.Key(ref.Type), RecordID: tables.Key(ref.ID), OpKey: tables.Key(key), Delta: delta}}
	if ttl > 0 {
		at := p.now().Add(ttl)
		w.row.ExpiresAt = &at
	}
	rows = DropZero(rows)
	SortRows(rows)
	pool, inTx := p.sessions.Pool(db)
	if c := p.CoalescerFor(db, pool, inTx); c != nil {
		err = p.CoalesceRows(db, c, Row{}, rows, w)
	} else {
		err = p.sessions.WriteTx(db, func(tx *gorm.DB) error {
			return p.ApplyOnces(tx, nil, []*waiter{{rows: rows, once: w}})
		})
	}
	return err == nil && w.applied, err
}

// RemoveOnceRows deletes the key and subtracts its delta in one write transaction.
// rowsFor gives the rows a delta of the counter touches (rowsOf).
func (p *Engine) RemoveOnceRows(db *gorm.DB, ref meta.Ref, rowsFor func(delta int64) []Row, key string) (delta int64, removed bool, err error) {
	w := &OnceWrite{row: tables.Once{RecordType: tables.Key(ref.Type), RecordID: tables.Key(ref.ID), OpKey: tables.Key(key)}, rowsFor: rowsFor}
	pool, inTx := p.sessions.Pool(db)
	if c := p.CoalescerFor(db, pool, inTx); c != nil {
		err = p.CoalesceRows(db, c, Row{}, nil, w)
	} else {
		err = p.sessions.WriteTx(db, func(tx *gorm.DB) error {
			return p.ApplyOnces(tx, nil, []*waiter{{once: w}})
		})
	}
	if err != nil || !w.applied {
		return 0, false, err
	}
	return w.row.Delta, true, nil
}

// onceCondition selects one key's row.
func onceCondition(ref meta.Ref, key string) clause.Expression {
	return clause.And(clause.Eq{Column: clause.Column{Name: "record_type"}, Value: ref.Type},
		clause.Eq{Column: clause.Column{Name: "record_id"}, Value: ref.ID},
		clause.Eq{Column: clause.Column{Name: "op_key"}, Value: key})
}

const (
	MarkerLife     = time.Hour      // an owner writes through a marker this long after making it
	markerPruneAge = 24 * time.Hour // pruneMarkers deletes rows of markers made longer ago
)

// MarkerNow is the markers' clock: the real one, not Config.Now (the clock of
// bucketed counters, read once per write: tests count its readings).
var MarkerNow = time.Now

// NewMarkerAt makes a marker no one else uses, at now: its ID is "t", now in milliseconds since
// the Unix epoch as 12 hex digits, and 128 random bits as 32.
func NewMarkerAt(now time.Time) *Marker {
	id := fmt.Sprintf("t%012x%016x%016x", max(now.UnixMilli(), 0), rand.Uint64(), rand.Uint64())
	return &Marker{Ref: meta.Ref{Type: MarkerType, ID: id}, Born: now}
}

// markerBorn reads the time in a marker's ID; ok is false for an ID without
// one (an older version's, or not a marker's).
func markerBorn(id string) (born time.Time, ok bool) {
	if len(id) != 45 || id[0] != 't' {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(id[1:13], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// marker takes a marker for the coalescer's next statement. Markers older
// than MarkerLife are retired here: no statement is in flight through a
// marker in the pool, so their rows are deleted now, in the background
// (one that fails is left to pruneMarkers).
func (c *coalescer) marker(db *gorm.DB, ctx context.Context) *Marker {
	m, stale := c.markers.get(MarkerNow())
	if len(stale) > 0 {
		p := c.p
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MarkerWait)
			defer cancel()
			for _, s := range stale {
				_ = p.DropMarker(db.WithContext(rctx), s.Ref)
			}
		}()
	}
	return m
}

// pruneBatch bounds the marker rows one DELETE of PruneMarkerRows removes.
const pruneBatch = 1000

// PruneMarkerRows deletes the rows of markers made more than markerPruneAge
// before now, markers whose owners have stopped writing through them: exited
// processes' and retired ones. It reads the markers' IDs on the primary (a
// few rows per process) and deletes the old ones by ID, pruneBatch at a time.
//
//	SELECT `record_id` FROM `slotted_counters` WHERE `record_type` = 'slotted:outcome'
//	DELETE FROM `slotted_counters` WHERE `record_type` = 'slotted:outcome' AND `record_id` IN ('t019a...','t019a...')
func (p *Engine) PruneMarkerRows(ctx context.Context, db *gorm.DB, now time.Time) (pruned int64, err error) {
	typ := clause.Eq{Column: clause.Column{Name: "record_type"}, Value: MarkerType}
	var ids []string
	if err := session.Primary(db, p.cfg.Table).WithContext(ctx).Table(p.cfg.Table).Where(typ).Pluck("record_id", &ids).Error; err != nil {
		return 0, err
	}
	var old []any
	for _, id := range ids {
		if born, ok := markerBorn(id); ok && now.Sub(born) > markerPruneAge {
			old = append(old, id)
		}
	}
	for len(old) > 0 && err == nil {
		batch := old[:min(len(old), pruneBatch)]
		old = old[len(batch):]
		err = p.sessions.Retry.Do(ctx, session.InTx(db), func(ctx context.Context) error {
			res := session.Primary(db, p.cfg.Table).WithContext(ctx).Table(p.cfg.Table).Where(typ).
				Where(clause.IN{Column: clause.Column{Name: "record_id"}, Values: batch}).Delete(&tables.Counter{})
			pruned += res.RowsAffected
			return res.Error
		})
	}
	return pruned, err
}

// batchStart is the start time batchDone gets.
func batchStart() time.Time { return time.Now() }

// Arg marks a placeholder while rendering; render records where each one landed.
type Arg int

// args puts the call's values in placeholder order.
func Args(order []Arg, recordType, recordID string, slot int, delta int64) []any {
	return AppendArgs(make([]any, 0, len(order)), order, recordType, recordID, slot, delta)
}

// appendArgs is args for one row of a multi-row statement.
func AppendArgs(dst []any, order []Arg, recordType, recordID string, slot int, delta int64) []any {
	for _, a := range order {
		switch a {
		case ArgRecordType:
			dst = append(dst, recordType)
		case ArgRecordID:
			dst = append(dst, recordID)
		case ArgSlot:
			dst = append(dst, slot)
		case ArgDelta:
			dst = append(dst, delta)
		}
	}
	return dst
}

// execRendered runs a statement rendered at Initialize (the upserts) through
// gorm's Raw callbacks, so the caller's logger, tracing and dbresolver see
// it, on pool and with the caller's routing: no statement building per call.
func ExecRendered(db *gorm.DB, pool gorm.ConnPool, ctx context.Context, query string, vals []any) *gorm.DB {
	tx := &gorm.DB{Config: db.Config}
	tx.Statement = &gorm.Statement{DB: tx, ConnPool: pool, Context: ctx, Vars: vals, Clauses: map[string]clause.Clause{}}
	session.Inherit(tx.Statement, db.Statement, true)
	tx.Statement.SQL.WriteString(query)
	res := db.Callback().Raw().Execute(tx)
	if res.Error == nil && res.DryRun {
		res.Error = errs.ErrDryRun // rendered and logged, not written: the model's field must not move
	}
	return res
}

const (
	ArgRecordType Arg = iota
	ArgRecordID
	ArgSlot
	ArgDelta
)
