package slotted

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"

	"gorm.io/gorm/schema"
)

// recordKey turns a model's primary key into its record_id: integers as
// decimal text, strings as they are, and types with a String or Value method
// (uuid.UUID and friends) through that method. The form is documented, so a
// Ref{Type: "posts.likes", ID: "42"} names the same counter as post 42's likes.
type recordKey struct {
	column string // the primary key's column
	index  []int
	typ    reflect.Type
	kind   reflect.Kind
	// parts are the columns of a composite primary key, in the schema's
	// order; nil for a single-column key (key_composite.go).
	parts []recordKey
}

var (
	valuerType   = reflect.TypeOf((*driver.Valuer)(nil)).Elem()
	stringerType = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
)

func newRecordKey(s *schema.Schema) (recordKey, error) {
	switch len(s.PrimaryFields) {
	case 0:
		return recordKey{}, fmt.Errorf("%w: %s has no primary key", ErrUnsupportedModel, s.Name)
	case 1:
	default:
		return newCompositeKey(s)
	}
	return newKeyPart(s, s.PrimaryFields[0])
}

// newKeyPart is the record key of one primary-key column.
func newKeyPart(s *schema.Schema, f *schema.Field) (recordKey, error) {
	k := recordKey{column: f.DBName, index: f.StructField.Index, typ: f.FieldType, kind: f.FieldType.Kind()}
	switch k.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		return k, nil
	}
	if k.typ.Implements(valuerType) || k.typ.Implements(stringerType) {
		k.kind = reflect.Interface // formatted through its method
		return k, nil
	}
	return recordKey{}, fmt.Errorf("%w: %s.%s is a %s; use an integer, a string, or a type with a String or Value method", ErrUnsupportedKey, s.Name, f.Name, f.FieldType)
}

// value returns the primary key of struct value v as gorm would bind it.
func (k recordKey) value(v reflect.Value) any {
	if k.parts != nil {
		return k.compositeValue(v)
	}
	f, _ := fieldAt(v, k.index) // only called for records whose id() succeeded
	return f.Interface()
}

// id returns the record_id of struct value v.
func (k recordKey) id(v reflect.Value) (string, error) {
	if k.parts != nil {
		return k.compositeID(v)
	}
	f, ok := fieldAt(v, k.index)
	if !ok || f.IsZero() {
		return "", ErrMissingPrimaryKey
	}
	var (
		id  string
		err error
	)
	switch k.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(f.Uint(), 10), nil
	case reflect.String:
		id = f.String()
	default:
		if id, err = formatKey(f.Interface()); err != nil {
			return "", err
		}
	}
	if id == "" {
		return "", ErrMissingPrimaryKey // a non-zero key whose Value or String is empty
	}
	if err := checkKey("record id", id); err != nil {
		return "", err
	}
	return id, nil
}

func formatKey(v any) (string, error) {
	if valuer, ok := v.(driver.Valuer); ok {
		dv, err := valuer.Value()
		if err != nil {
			return "", fmt.Errorf("%w: %T.Value: %v", ErrUnsupportedKey, v, err)
		}
		switch dv := dv.(type) {
		case string:
			return dv, nil
		case int64:
			return strconv.FormatInt(dv, 10), nil
		case []byte:
			return hex.EncodeToString(dv), nil
		case nil:
			return "", ErrMissingPrimaryKey
		}
	}
	if s, ok := v.(fmt.Stringer); ok {
		return s.String(), nil
	}
	return "", fmt.Errorf("%w: %T has no usable String or Value method", ErrUnsupportedKey, v)
}

// sweepable reports whether record ids can be turned back into keys to look
// records up by: integers and strings can; other types only if their Value
// is text or an integer (a uuid.UUID, say), not bytes written out as hex.
func (k recordKey) sweepable() error {
	if k.parts != nil {
		return k.eachPart(recordKey.sweepable)
	}
	if k.kind != reflect.Interface {
		return nil
	}
	if k.typ.Kind() == reflect.Pointer {
		return fmt.Errorf("%w: Sweep cannot look %s keys up from their record_id text", ErrUnsupportedKey, k.typ)
	}
	if v, ok := reflect.New(k.typ).Elem().Interface().(driver.Valuer); ok {
		if dv, err := v.Value(); err == nil {
			switch dv.(type) {
			case string, int64:
				return nil
			}
		}
	}
	return fmt.Errorf("%w: Sweep cannot look %s keys up from their record_id text", ErrUnsupportedKey, k.typ)
}

// parse turns a record_id back into a primary key value to query the parent
// table with; ok is false when no record of this model can have that id.
func (k recordKey) parse(id string) (any, bool) {
	if k.parts != nil {
		return k.compositeParse(id)
	}
	switch k.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(id, 10, k.typ.Bits())
		return n, err == nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(id, 10, k.typ.Bits())
		return n, err == nil
	}
	return id, true // strings, and types gorm binds from their text form
}
