package meta

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"

	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/errs"
)

// Key turns a model's primary key into its record_id: integers as
// decimal text, strings as they are, and types with a String or Value method
// (uuid.UUID and friends) through that method. The form is documented, so a
// Ref{Type: "posts.likes", ID: "42"} names the same counter as post 42's likes.
type Key struct {
	Column string // the primary key's column
	Index  []int
	Type   reflect.Type
	Kind   reflect.Kind
	// Parts are the columns of a composite primary key, in the schema's
	// order; nil for a single-column key (key_composite.go).
	Parts []Key
}

var (
	valuerType   = reflect.TypeOf((*driver.Valuer)(nil)).Elem()
	stringerType = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
)

func newRecordKey(s *schema.Schema) (Key, error) {
	switch len(s.PrimaryFields) {
	case 0:
		return Key{}, fmt.Errorf("%w: %s has no primary key", errs.ErrUnsupportedModel, s.Name)
	case 1:
	default:
		return newCompositeKey(s)
	}
	return newKeyPart(s, s.PrimaryFields[0])
}

// newKeyPart is the record key of one primary-key column.
func newKeyPart(s *schema.Schema, f *schema.Field) (Key, error) {
	k := Key{Column: f.DBName, Index: f.StructField.Index, Type: f.FieldType, Kind: f.FieldType.Kind()}
	switch k.Kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		return k, nil
	}
	if k.Type.Implements(valuerType) || k.Type.Implements(stringerType) {
		k.Kind = reflect.Interface // formatted through its method
		return k, nil
	}
	return Key{}, fmt.Errorf("%w: %s.%s is a %s; use an integer, a string, or a type with a String or Value method", errs.ErrUnsupportedKey, s.Name, f.Name, f.FieldType)
}

// Value returns the primary key of struct Value v as gorm would bind it.
func (k Key) Value(v reflect.Value) any {
	if k.Parts != nil {
		return k.compositeValue(v)
	}
	f, _ := FieldAt(v, k.Index) // only called for records whose id() succeeded
	return f.Interface()
}

// ID returns the record_id of struct value v.
func (k Key) ID(v reflect.Value) (string, error) {
	if k.Parts != nil {
		return k.compositeID(v)
	}
	f, ok := FieldAt(v, k.Index)
	if !ok || f.IsZero() {
		return "", errs.ErrMissingPrimaryKey
	}
	var (
		id  string
		err error
	)
	switch k.Kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(f.Uint(), 10), nil
	case reflect.String:
		id = f.String()
	default:
		if id, err = FormatKey(f.Interface()); err != nil {
			return "", err
		}
	}
	if id == "" {
		return "", errs.ErrMissingPrimaryKey // a non-zero key whose Value or String is empty
	}
	if err := CheckKey("record id", id); err != nil {
		return "", err
	}
	return id, nil
}

func FormatKey(v any) (string, error) {
	if valuer, ok := v.(driver.Valuer); ok {
		dv, err := valuer.Value()
		if err != nil {
			return "", fmt.Errorf("%w: %T.Value: %v", errs.ErrUnsupportedKey, v, err)
		}
		switch dv := dv.(type) {
		case string:
			return dv, nil
		case int64:
			return strconv.FormatInt(dv, 10), nil
		case []byte:
			return hex.EncodeToString(dv), nil
		case nil:
			return "", errs.ErrMissingPrimaryKey
		}
	}
	if s, ok := v.(fmt.Stringer); ok {
		return s.String(), nil
	}
	return "", fmt.Errorf("%w: %T has no usable String or Value method", errs.ErrUnsupportedKey, v)
}

// Sweepable reports whether record ids can be turned back into keys to look
// records up by: integers and strings can; other types only if their Value
// is text or an integer (a uuid.UUID, say), not bytes written out as hex.
func (k Key) Sweepable() error {
	if k.Parts != nil {
		return k.eachPart(Key.Sweepable)
	}
	if k.textForm() {
		return nil
	}
	return fmt.Errorf("%w: Sweep cannot look %s keys up from their record_id text", errs.ErrUnsupportedKey, k.Type)
}

// textForm reports whether a single-column key's record_id is its text in the
// database: integers and strings are; a type formatted by its own methods
// only if it is a non-pointer whose Value is text or an integer (uuid.UUID),
// not bytes written out as hex. Sweepable and Textual ask it.
func (k Key) textForm() bool {
	if k.Kind != reflect.Interface {
		return true
	}
	if k.Type.Kind() == reflect.Pointer {
		return false
	}
	if v, ok := reflect.New(k.Type).Elem().Interface().(driver.Valuer); ok {
		if dv, err := v.Value(); err == nil {
			switch dv.(type) {
			case string, int64:
				return true
			}
		}
	}
	return false
}

// Parse turns a record_id back into a primary key value to query the parent
// table with; ok is false when no record of this model can have that id.
func (k Key) Parse(id string) (any, bool) {
	if k.Parts != nil {
		return k.compositeParse(id)
	}
	switch k.Kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(id, 10, k.Type.Bits())
		return n, err == nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(id, 10, k.Type.Bits())
		return n, err == nil
	}
	return id, true // strings, and types gorm binds from their text form
}

// Textual reports whether the database's text form of the key (CAST(id AS
// text)) is its record_id: integers, strings, and Valuers that bind text or
// integers (uuid.UUID); not keys written to record_id as hex bytes.
func (k Key) Textual() error {
	if k.Parts != nil {
		return k.eachPart(Key.Textual)
	}
	if k.textForm() {
		return nil
	}
	return fmt.Errorf("%w: %s keys are not stored as their record_id text, so their counters cannot be joined", errs.ErrUnsupportedKey, k.Type)
}

// HasKeyMethod reports whether t formats itself as a key (a String or
// Value method), as uuid.UUID and friends do.
func HasKeyMethod(t reflect.Type) bool { return t.Implements(valuerType) || t.Implements(stringerType) }
