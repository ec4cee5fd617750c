package maintain

import (
	"time"

	"github.com/slotted-go/slotted/internal/meta"
)

// What the maintenance calls report, one type per call and a Runner pass made
// of them. The root names them (slotted.Pass, ...) as aliases: they sit below
// the root so that the Observer's Event, the calls and the Runner share them
// without the event types depending on the calls.

// Pass reports one pass of a Runner.
type Pass struct {
	Started time.Time
	Took    time.Duration
	Compact CompactProgress
	RollUp  []RollUpProgress // in the order of Runner.RollUp
	Pruned  int64            // expired once keys deleted (PruneKeys)
	Markers int64            // outcome-marker rows of exited processes deleted (PruneMarkers; every pass)
	Buckets []BucketProgress // in the order of Runner.Buckets.Models
	Err     error            // every error of the pass, joined
}

// CompactProgress reports a CompactAll run.
type CompactProgress struct {
	Batches     int   // transactions committed
	Counters    int   // counters examined that had more than MinRows rows
	RowsRemoved int64 // slot rows removed
	// Last is the last counter of the last batch: CompactOptions.After for
	// resuming. Zero until the first batch ends.
	Last meta.Ref
	// Skipped lists the counters left as they were because their transaction
	// still failed with a lock conflict after the retries (a counter so hot
	// that compacting it keeps losing to its writers, e.g. at certification on
	// Galera). Their totals are intact; a later run compacts them.
	Skipped []meta.Ref
}

// BucketProgress reports a MaintainBuckets run (or a Runner pass's, per model).
type BucketProgress struct {
	Compacted   int   // counters (one record's one bucket) with more than one row, folded into one
	RowsRemoved int64 // slot rows removed by compaction
	Expired     int   // buckets deleted by retention
	RowsExpired int64 // slot rows they held
}

// RollUpProgress reports a RollUpAll run.
type RollUpProgress struct {
	Batches int
	Records int
	Last    any // primary key of the last record rolled up
}

// SweepProgress reports a Sweep.
type SweepProgress struct {
	Checked int   // record ids looked up in the parent table
	Orphans int   // of those, without a parent
	Rows    int64 // counter rows removed
}
