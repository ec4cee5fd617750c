package slotted

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"
)

// Ref names a counter directly by its record_type and record_id, without a
// model: the pattern's original `record_type = 123, record_id = 456` use.
// A model counter's Ref is Type "<table>.<counter>" (or its tag's type:) and
// ID the primary key as decimal text or string; RefOf computes it. Both are
// valid UTF-8 without NUL bytes, 1..MaxKeyLen bytes.
//
// A bucket of a bucketed counter is a Ref too: Type "<record_type>@<label>",
// e.g. "posts.views@2026-11-23" (see the buckets: tag option).
//
// Ref.Slots is how many slot rows AddRef spreads the counter's writes over.
// 0 means Config.Slots. RefOf sets it to the model counter's slots: tag
// option (or Config.Slots), so AddRef(db, ref, 1) with a ref from RefOf
// writes exactly as Add on the model does. Reads and compaction ignore it:
// they take every row the counter has.
type Ref = meta.Ref

// RefOf returns the Ref of a model's counter, for logging or for AddRef/CountRef.
func RefOf(db *gorm.DB, model any, counter string) (Ref, error) {
	p, err := pluginOf(db)
	if err != nil {
		return Ref{}, err
	}
	c, _, id, err := p.models.Target(db, model, counter)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Type: c.RecordType, ID: id, Slots: c.Slots}, nil
}
