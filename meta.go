package slotted

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// modelMeta is what the plugin knows about one model type. It is built once
// per type and cached on the plugin, so the hot path does no tag parsing and
// no schema lookups.
type modelMeta struct {
	typ      reflect.Type // the struct type
	table    string
	key      recordKey
	counters []*counter
	byName   map[string]*counter // tag name and Go field name
	// columns are counter fields that gorm still maps to a column (no gorm:"-"):
	// they are omitted from the model's INSERT, UPDATE and SELECT statements.
	columns []string
}

// counter is one counter field of a model.
type counter struct {
	name       string // tag name, e.g. "likes"
	recordType string // e.g. "posts.likes"
	slots      int
	index      []int // struct field index path
	kind       reflect.Kind
	cache      string // column of the parent table RollUp writes the total to, or ""
	cacheIndex []int  // that column's struct field
}

// modelResult caches a failed build too: a model's tags do not change at run time.
type modelResult struct {
	meta *modelMeta
	err  error
}

// metaFor returns the metadata of a struct type, parsing the gorm schema on first use.
func (p *Plugin) metaFor(db *gorm.DB, typ reflect.Type) (*modelMeta, error) {
	if r, ok := p.models.Load(typ); ok {
		r := r.(*modelResult)
		return r.meta, r.err
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(reflect.New(typ).Interface()); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedModel, typ, err)
	}
	return p.metaForSchema(db, stmt.Schema)
}

// modelOf resolves an argument that names a model type, such as &Post{}.
func (p *Plugin) modelOf(db *gorm.DB, model any) (*modelMeta, error) {
	var typ reflect.Type
	if model != nil {
		typ = structType(reflect.TypeOf(model))
	}
	if typ == nil {
		return nil, fmt.Errorf("%w: %T is not a struct", ErrUnsupportedModel, model)
	}
	m, err := p.metaFor(db, typ)
	if err == nil && len(m.counters) == 0 {
		err = fmt.Errorf("%w: %s has no counters", ErrUnknownCounter, typ)
	}
	return m, err
}

// batchSize applies an option's default and rejects negative values.
func batchSize(n, def int, name string) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 0:
		return 0, fmt.Errorf("%w: %s %d", ErrInvalidConfig, name, n)
	}
	return n, nil
}

// metaForSchema is metaFor for callbacks, which already hold the parsed schema.
// On a bad tag it returns the error and a meta holding only columns, so the
// omit callbacks still keep counter fields out of the parent table's SQL.
func (p *Plugin) metaForSchema(db *gorm.DB, s *schema.Schema) (*modelMeta, error) {
	if r, ok := p.models.Load(s.ModelType); ok {
		r := r.(*modelResult)
		return r.meta, r.err
	}
	m, err := p.buildMeta(db, s)
	r, _ := p.models.LoadOrStore(s.ModelType, &modelResult{m, err})
	return r.(*modelResult).meta, r.(*modelResult).err
}

func (p *Plugin) buildMeta(db *gorm.DB, s *schema.Schema) (*modelMeta, error) {
	m := &modelMeta{typ: s.ModelType, table: s.Table, byName: map[string]*counter{}}
	for _, f := range s.Fields {
		if _, ok := f.Tag.Lookup("slotted"); ok && f.DBName != "" && (f.Creatable || f.Updatable || f.Readable) {
			m.columns = append(m.columns, f.DBName)
		}
	}
	for _, f := range s.Fields {
		tag, ok := f.Tag.Lookup("slotted")
		if !ok {
			continue
		}
		c, err := p.buildCounter(db, s, f, tag)
		if err != nil {
			return &modelMeta{typ: m.typ, columns: m.columns}, err
		}
		for _, name := range []string{c.name, f.Name} {
			if prev, dup := m.byName[name]; dup && prev != c {
				return &modelMeta{typ: m.typ, columns: m.columns}, fmt.Errorf("%w: %s: two counters named %q", ErrInvalidConfig, s.Name, name)
			}
			m.byName[name] = c
		}
		m.counters = append(m.counters, c)
	}
	if len(m.counters) == 0 {
		return m, nil // a model without counters: callbacks skip it; the API reports ErrUnknownCounter
	}
	key, err := newRecordKey(s)
	if err != nil {
		return &modelMeta{typ: m.typ, columns: m.columns}, err
	}
	m.key = key
	return m, nil
}

func (p *Plugin) buildCounter(db *gorm.DB, s *schema.Schema, f *schema.Field, tag string) (*counter, error) {
	o, err := parseTag(tag)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", s.Name, f.Name, err)
	}
	switch f.FieldType.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return nil, fmt.Errorf("%w: %s.%s: a counter field must be an integer, not %s", ErrInvalidConfig, s.Name, f.Name, f.FieldType)
	}
	c := &counter{name: o.name, recordType: o.recordType, slots: o.slots, index: f.StructField.Index, kind: f.FieldType.Kind()}
	if c.name == "" {
		c.name = db.NamingStrategy.ColumnName("", f.Name)
	}
	if c.recordType == "" {
		c.recordType = s.Table + "." + c.name
	}
	if len(c.recordType) > MaxKeyLen {
		return nil, fmt.Errorf("%w: %s.%s: record_type %q is longer than %d bytes; set type: in the tag", ErrInvalidConfig, s.Name, f.Name, c.recordType, MaxKeyLen)
	}
	if c.slots == 0 {
		c.slots = p.cfg.Slots
	}
	if o.cache != "" {
		cf := s.LookUpField(o.cache)
		if cf == nil || cf.DBName == "" {
			return nil, fmt.Errorf("%w: %s.%s: cache column %q is not a column of %s", ErrInvalidConfig, s.Name, f.Name, o.cache, s.Table)
		}
		if k := cf.FieldType.Kind(); k < reflect.Int || k > reflect.Uint64 {
			return nil, fmt.Errorf("%w: %s.%s: cache column %q must be an integer field", ErrInvalidConfig, s.Name, f.Name, o.cache)
		}
		c.cache, c.cacheIndex = cf.DBName, cf.StructField.Index
	}
	return c, nil
}

// counter returns the named counter of the model.
func (m *modelMeta) counter(name string) (*counter, error) {
	if c, ok := m.byName[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("%w: %s has no counter %q", ErrUnknownCounter, m.typ, name)
}

// field returns the counter field of a struct value; ok is false when the path
// runs through a nil embedded pointer.
// Setting it allocates nil embedded structs on the way, as gorm's scanner does.
func (c *counter) field(v reflect.Value) (reflect.Value, bool) { return walk(v, c.index, true) }

// fieldAt reads a field by its gorm index path; ok is false when the path runs
// through a nil embedded pointer.
func fieldAt(v reflect.Value, index []int) (reflect.Value, bool) { return walk(v, index, false) }

// walk follows a gorm field index path. gorm writes -i-1 for field i when it
// is a pointer to an embedded struct, dereferenced on the way; a nil one is
// allocated when alloc is set (and the struct can be changed), else it ends
// the walk with ok false.
func walk(v reflect.Value, index []int, alloc bool) (reflect.Value, bool) {
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

// set stores n into the counter field of struct value v, saturating at the
// field type's bounds (an int8 counter cannot hold 300; an unsigned one cannot go below 0).
func (c *counter) set(v reflect.Value, n int64) {
	if f, ok := c.field(v); ok && f.CanSet() {
		setInt(f, n)
	}
}

// setInt stores n into an integer field, saturating at its type's bounds.
func setInt(f reflect.Value, n int64) {
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

// add moves the in-memory counter field by delta, as Laravel's increment does.
func (c *counter) add(v reflect.Value, delta int64) {
	f, ok := c.field(v)
	if !ok {
		return
	}
	var cur int64
	switch c.kind {
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
	c.set(v, sum)
}
