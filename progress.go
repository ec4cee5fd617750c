package slotted

import (
	"github.com/slotted-go/slotted/internal/countercache"
	"github.com/slotted-go/slotted/internal/maintain"
)

// What the maintenance calls report: one type per call, and a Runner pass
// made of them. They are defined in internal/maintain (and FixProgress and
// Drift in internal/countercache), below the root, so that the Observer's
// Event and the calls share them without depending on each other.

type (
	// Pass reports one pass of a Runner: its CompactAll, RollUpAll, PruneKeys, PruneMarkers and MaintainBuckets runs, and every error of the pass, joined.
	Pass = maintain.Pass
	// CompactProgress reports a CompactAll run; Last resumes it (CompactOptions.After).
	CompactProgress = maintain.CompactProgress
	// BucketProgress reports a MaintainBuckets run (or a Runner pass's, per model).
	BucketProgress = maintain.BucketProgress
	// RollUpProgress reports a RollUpAll run.
	RollUpProgress = maintain.RollUpProgress
	// FixProgress reports a FixAll run; Last resumes it (FixOptions.After).
	FixProgress = countercache.FixProgress
	// SweepProgress reports a Sweep.
	SweepProgress = maintain.SweepProgress
	// Drift is one counter whose stored total differed from what its children count (Fix, FixAll).
	Drift = countercache.Drift
)
