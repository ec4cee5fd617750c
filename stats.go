package slotted

import (
	"gorm.io/gorm"
)

// Stats counts what the plugin's writes ran into since db.Use.
type Stats struct {
	Retries   uint64              // statements or transactions run again after a conflict
	Conflicts map[Conflict]uint64 // conflicts seen, by kind, retried or not (inside a caller's transaction they are returned)

	// Coalesced writes (Config.DisableCoalescing): every write outside a transaction is counted here.
	Batches       uint64         // statements the coalescer ran, one per batch (retries not counted)
	BatchedWrites uint64         // writes they carried: BatchedWrites/Batches is the mean batch size
	BatchRows     map[int]uint64 // statements by counter rows written (1..8, 16, 32, ... MaxBatch)
	Waiting       int64          // writes queued for the next statement at this moment

	// Outcome markers (outcome.go, docs/outcomes.md): statements whose error left their outcome open
	// (a broken connection), settled by reading their marker.
	SettledLanded uint64 // had committed: reported as written, not written again
	SettledLost   uint64 // had not: retried or reported as not written

	// AddOnce / AddRefOnce outcomes (inside a caller's transaction: as decided there, before its commit).
	OnceApplied    uint64 // keys that were new (or expired): the delta was added
	OnceDuplicates uint64 // keys already recorded: nothing was added
}

// onceDone counts an AddOnce's outcome and returns it.
func (p *Plugin) onceDone(applied bool, err error) (bool, error) {
	switch {
	case err != nil:
	case applied:
		p.stats.onceApplied.Add(1)
	default:
		p.stats.onceDuplicates.Add(1)
	}
	return applied, err
}

// Stats returns the plugin's counters: how often writes hit lock conflicts and were retried.
func (p *Plugin) Stats() Stats {
	s := Stats{OnceApplied: p.stats.onceApplied.Load(), OnceDuplicates: p.stats.onceDuplicates.Load()}
	if p.writes != nil { // nil before db.Use
		w := p.writes.Counts()
		s.Batches, s.BatchedWrites, s.BatchRows, s.Waiting = w.Batches, w.BatchedWrites, w.BatchRows, w.Waiting
		s.SettledLanded, s.SettledLost = w.SettledLanded, w.SettledLost
	} else {
		s.BatchRows = map[int]uint64{}
	}
	if p.sessions != nil { // nil before db.Use
		s.Retries, s.Conflicts = p.sessions.Retry.Counts()
	} else {
		s.Conflicts = map[Conflict]uint64{}
	}
	return s
}

// StatsOf returns the Stats of the plugin registered on db.
func StatsOf(db *gorm.DB) (Stats, error) {
	p, err := pluginOf(db)
	if err != nil {
		return Stats{}, err
	}
	return p.Stats(), nil
}
