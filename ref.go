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

// RefOfKey returns the Ref of a model's counter for the record whose primary
// key is parts, in the order of the model's primary-key fields, without
// loading the record: RefOfKey(db, &Membership{}, "logins", orgID, userID).
// Each part is converted to its field's type (integers to integers, strings
// to strings, other types as they are) and formatted as the model's records
// are, so the Ref names the same counter as Add on the record. A wrong number
// of parts, or a part of another type or out of its field's range, is
// ErrUnsupportedKey; a nil or zero part is ErrMissingPrimaryKey, as a record
// with that key would be.
func RefOfKey(db *gorm.DB, model any, counter string, parts ...any) (Ref, error) {
	p, err := pluginOf(db)
	if err != nil {
		return Ref{}, err
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return Ref{}, err
	}
	c, err := m.Counter(counter)
	if err != nil {
		return Ref{}, err
	}
	id, err := m.IDOf(parts)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Type: c.RecordType, ID: id, Slots: c.Slots}, nil
}

// SplitKeyID returns the parts of a composite key's record_id (a Ref.ID from
// TopRefs, say), as text: "a%2Cb,50%25" is ["a,b", "50%"]. An id that no
// key encodes (a '%' not followed by 25 or 2C) is ErrUnsupportedKey. An id
// without ',' is one part: a single-column key's id is returned whole.
func SplitKeyID(id string) ([]string, error) { return meta.SplitKeyID(id) }
