package slotted

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/write"
)

// Marker rows of processes that are gone. A process's markers are rows of
// the counter table (outcome.go) that it deletes itself only in a few cases
// (a marker retired by a deadline, a Buffer's on Close): a process that
// exits, let alone one SIGKILLed, leaves its markers' rows behind, and every
// restart adds as many. Nothing says whether a marker's owner still lives,
// but its age does: a marker's ID starts with the time it was made, its
// owner stops writing through it write.MarkerLife after that (it takes a new one
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
	return p.writes.PruneMarkerRows(session.Context(db), db, write.MarkerNow())
}
