package slotted

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"
)

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
