package meta

import "reflect"

// Counter fields are reached by gorm's field index paths, and written
// saturating at the field type's bounds.

// Field returns the counter Field of a struct value; ok is false when the path
// runs through a nil embedded pointer.
// Setting it allocates nil embedded structs on the way, as gorm's scanner does.
func (c *Counter) Field(v reflect.Value) (reflect.Value, bool) { return Walk(v, c.Index, true) }

// FieldAt reads a field by its gorm index path; ok is false when the path runs
// through a nil embedded pointer.
func FieldAt(v reflect.Value, index []int) (reflect.Value, bool) { return Walk(v, index, false) }

// Walk follows a gorm field index path. gorm writes -i-1 for field i when it
// is a pointer to an embedded struct, dereferenced on the way; a nil one is
// allocated when alloc is set (and the struct can be changed), else it ends
// the walk with ok false.
func Walk(v reflect.Value, index []int, alloc bool) (reflect.Value, bool) {
	for n, i := range index {
		if i >= 0 {
			v = v.Field(i)
			continue
		}
		v = v.Field(-i - 1)
		if n == len(index)-1 {
			break
		}
		if v.IsNil() {
			if !alloc || !v.CanSet() {
				return v, false
			}
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	return v, true
}

// Set stores n into the counter field of struct value v, saturating at the
// field type's bounds (an int8 counter cannot hold 300; an unsigned one cannot go below 0).
func (c *Counter) Set(v reflect.Value, n int64) {
	if f, ok := c.Field(v); ok && f.CanSet() {
		SetInt(f, n)
	}
}

// SetInt stores n into an integer field, saturating at its type's bounds.
func SetInt(f reflect.Value, n int64) {
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := f.Type().Bits()
		lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
		f.SetInt(min(max(n, lo), hi))
	default:
		if n < 0 {
			n = 0
		}
		u := uint64(n)
		if bits := f.Type().Bits(); bits < 64 {
			u = min(u, uint64(1)<<bits-1)
		}
		f.SetUint(u)
	}
}

// Add moves the in-memory counter field by delta, as Laravel's increment does.
func (c *Counter) Add(v reflect.Value, delta int64) {
	f, ok := c.Field(v)
	if !ok {
		return
	}
	var cur int64
	switch c.Kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		cur = f.Int()
	default:
		cur = int64(min(f.Uint(), 1<<63-1))
	}
	sum := cur + delta
	if (delta > 0 && sum < cur) || (delta < 0 && sum > cur) { // int64 overflow
		sum = -1 << 63
		if delta > 0 {
			sum = 1<<63 - 1
		}
	}
	c.Set(v, sum)
}
