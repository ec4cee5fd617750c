package meta

import (
	"cmp"
	"fmt"

	"github.com/slotted-go/slotted/internal/errs"
)

// Ref names a counter directly by its record_type and record_id, without a
// model: the pattern's original `record_type = 123, record_id = 456` use.
// A model counter's Ref is Type "<table>.<counter>" (or its tag's type:) and
// ID the primary key as decimal text or string; RefOf computes it. Both are
// valid UTF-8 without NUL bytes, 1..MaxKeyLen bytes.
//
// A bucket of a bucketed counter is a Ref too: Type "<record_type>@<label>",
// e.g. "posts.views@2026-11-23" (see the buckets: tag option).
type Ref struct {
	Type string
	ID   string
	// Slots is how many slot rows AddRef spreads the counter's writes over.
	// 0 means Config.Slots. RefOf sets it to the model counter's slots: tag
	// option (or Config.Slots), so AddRef(db, ref, 1) with a ref from RefOf
	// writes exactly as Add on the model does. Reads and compaction ignore it:
	// they take every row the counter has.
	Slots int
}

// Validate checks both keys and the slot count.
func (r Ref) Validate() error {
	if r.Type == "" || r.ID == "" {
		return fmt.Errorf("%w: Ref %+v needs both Type and ID", errs.ErrMissingPrimaryKey, r)
	}
	if err := CheckKey("Ref.Type", r.Type); err != nil {
		return err
	}
	if r.Slots < 0 || r.Slots > errs.MaxSlots {
		return fmt.Errorf("%w: Ref.Slots %d not in 0..%d", errs.ErrInvalidArgument, r.Slots, errs.MaxSlots)
	}
	return CheckKey("Ref.ID", r.ID)
}

// SlotsOr is the slot count AddRef writes with.
func (r Ref) SlotsOr(def int) int {
	if r.Slots > 0 {
		return r.Slots
	}
	return def
}

// CompareRefs orders counters by key, the order every multi-counter
// transaction locks their rows in.
func CompareRefs(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID))
}
