package slotted

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Marker rows of processes that are gone. A process's markers are rows of
// the counter table (outcome.go) that it deletes itself only in a few cases
// (a marker retired by a deadline, a Buffer's on Close): a process that
// exits, let alone one SIGKILLed, leaves its markers' rows behind, and every
// restart adds as many. Nothing says whether a marker's owner still lives,
// but its age does: a marker's ID starts with the time it was made, its
// owner stops writing through it markerLife after that (it takes a new one
// and deletes the old row), and pruneMarkers (the Runner, every pass)
// deletes the rows of markers made more than markerPruneAge ago. Between the
// two lie 23 hours: for a statement or a lookup through a marker to be racing
// the prune, clocks would have to disagree by that much, or a statement stay
// in flight that long. A row written again after it was pruned (a COMMIT
// that stalled for a day) is pruned again on the next pass.
//
// IDs of markers made before this scheme (32 hex digits, no time) are never
// pruned: their owners cannot be told apart from the living. Delete them by
// hand once no process of that version runs (record_type 'slotted:outcome',
// record_id not starting with 't').

const (
	markerLife     = time.Hour      // an owner writes through a marker this long after making it
	markerPruneAge = 24 * time.Hour // pruneMarkers deletes rows of markers made longer ago
)

// markerNow is the markers' clock: the real one, not Config.Now (the clock of
// bucketed counters, read once per write: tests count its readings).
var markerNow = time.Now

// newMarkerAt makes a marker no one else uses, at now: its ID is "t", now in milliseconds since
// the Unix epoch as 12 hex digits, and 128 random bits as 32.
func newMarkerAt(now time.Time) *marker {
	id := fmt.Sprintf("t%012x%016x%016x", max(now.UnixMilli(), 0), rand.Uint64(), rand.Uint64())
	return &marker{ref: Ref{Type: MarkerType, ID: id}, born: now}
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
// than markerLife are retired here: no statement is in flight through a
// marker in the pool, so their rows are deleted now, in the background
// (one that fails is left to pruneMarkers).
func (c *coalescer) marker(db *gorm.DB, ctx context.Context) *marker {
	m, stale := c.markers.get(markerNow())
	if len(stale) > 0 {
		p := c.p
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markerWait)
			defer cancel()
			for _, s := range stale {
				_ = p.dropMarker(db.WithContext(rctx), s.ref)
			}
		}()
	}
	return m
}

// renewMarker (a Buffer's, under flushing with nothing in doubt) replaces the
// Buffer's marker once it is older than markerLife, deleting the old one's
// row (left to pruneMarkers if that fails).
func (b *Buffer) renewMarker(ctx context.Context) {
	now := markerNow()
	if now.Sub(b.marker.born) < markerLife {
		return
	}
	old := b.marker
	b.marker = newMarkerAt(now)
	_ = b.p.dropMarker(b.db.WithContext(ctx), old.ref)
}

// pruneMarkers deletes the rows of markers made more than markerPruneAge
// before now, markers whose owners have stopped writing through them: exited
// processes' and retired ones. It reads the markers' IDs on the primary (a
// few rows per process) and deletes the old ones by ID, pruneBatch at a time.
//
//	SELECT `record_id` FROM `slotted_counters` WHERE `record_type` = 'slotted:outcome'
//	DELETE FROM `slotted_counters` WHERE `record_type` = 'slotted:outcome' AND `record_id` IN ('t019a...','t019a...')
func (p *Plugin) pruneMarkers(ctx context.Context, db *gorm.DB, now time.Time) (pruned int64, err error) {
	typ := clause.Eq{Column: clause.Column{Name: "record_type"}, Value: MarkerType}
	var ids []string
	if err := primary(db, p.cfg.Table).WithContext(ctx).Table(p.cfg.Table).Where(typ).Pluck("record_id", &ids).Error; err != nil {
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
		err = p.withRetry(ctx, inTransaction(db), func(ctx context.Context) error {
			res := primary(db, p.cfg.Table).WithContext(ctx).Table(p.cfg.Table).Where(typ).
				Where(clause.IN{Column: clause.Column{Name: "record_id"}, Values: batch}).Delete(&SlottedCounter{})
			pruned += res.RowsAffected
			return res.Error
		})
	}
	return pruned, err
}

// PruneMarkers deletes the outcome-marker rows (MarkerType) left by
// processes that exited, those made more than 24 hours ago, and returns how
// many it deleted; a Runner does it every pass. Call it now and then (daily
// is plenty) when you run no Runner. It never deletes a live process's
// marker: a process stops writing through a marker an hour after it made it.
func PruneMarkers(db *gorm.DB) (int64, error) {
	p, err := liveOf(db)
	if err != nil {
		return 0, err
	}
	return p.pruneMarkers(contextOf(db), db, markerNow())
}
