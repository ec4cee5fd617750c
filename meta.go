package slotted

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/bucketing"
)

// XModel is what the plugin knows about one model type. It is built once
// per type and cached on the plugin, so the hot path does no tag parsing and
// no schema lookups.
type XModel struct {
	Type      reflect.Type // the struct type
	Table    string
	Key      XKey
	Counters []*XCounter
	ByName   map[string]*XCounter // tag name and Go field name
	// Columns are counter fields that gorm still maps to a column (no gorm:"-"):
	// they are omitted from the model's INSERT, UPDATE and SELECT statements.
	Columns []string
	Extras  []*XExtra // fields filled beside the counters: window:, series:, applied (extras.go)
}

// XCounter is one XCounter field of a model.
type XCounter struct {
	Name       string // tag name, e.g. "likes"
	RecordType string // e.g. "posts.likes"
	Slots      int
	Index      []int // struct field index path
	Kind       reflect.Kind
	Cache      string // column of the parent table RollUp writes the total to, or ""
	CacheIndex []int  // that column's struct field

	Bucket *bucketing.Scheme // the buckets: option (bucket.go), or nil
}

// modelResult caches a failed build too: a model's tags do not change at run time.
type modelResult struct {
	meta *XModel
	err  error
}

// The plugin's arguments name models in three ways; each has one lookup:
//
//	target      one record and one counter, e.g. (&post, "likes"): Add, Count, Compact, Reset, RefOf
//	modelArg    a model type, e.g. &Post{}: Sweep, RollUpAll
//	modelsArg   records to fill or roll up, e.g. &posts: Load, RollUp
//
// All of them end in metaOfType or, in callbacks that hold gorm's parsed
// schema already, metaOfSchema: the per-type cache.

// metaOfType returns the metadata of a struct type, parsing the gorm schema on first use.
func (p *Plugin) metaOfType(db *gorm.DB, typ reflect.Type) (*XModel, error) {
	if r, ok := p.models.Load(typ); ok {
		r := r.(*modelResult)
		return r.meta, r.err
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(reflect.New(typ).Interface()); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedModel, typ, err)
	}
	return p.metaOfSchema(db, stmt.Schema)
}

// metaOfSchema is metaOfType for callbacks, which already hold the parsed schema.
// On a bad tag it returns the error and a meta holding only columns, so the
// omit callbacks still keep counter fields out of the parent table's SQL.
func (p *Plugin) metaOfSchema(db *gorm.DB, s *schema.Schema) (*XModel, error) {
	if r, ok := p.models.Load(s.ModelType); ok {
		r := r.(*modelResult)
		return r.meta, r.err
	}
	m, err := p.buildMeta(db, s)
	r, _ := p.models.LoadOrStore(s.ModelType, &modelResult{m, err})
	return r.(*modelResult).meta, r.(*modelResult).err
}

// XPointerArg checks a write's model argument: writes move the model's field
// too, so it must be a non-nil pointer to a struct.
func XPointerArg(model any) error {
	if rv := reflect.ValueOf(model); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: %T: writes need a non-nil pointer to a struct", ErrUnsupportedModel, model)
	}
	return nil
}

// writeTarget is target for a write (pointerArg).
func (p *Plugin) writeTarget(db *gorm.DB, model any, name string) (*XCounter, reflect.Value, string, error) {
	if err := XPointerArg(model); err != nil {
		return nil, reflect.Value{}, "", err
	}
	c, v, id, err := p.target(db, model, name)
	if err == nil {
		err = p.checkExists(db, v) // MustExist, Config.RequireRecords (exists.go)
	}
	return c, v, id, err
}

// target finds the counter and record_id of one model value (a struct or a
// pointer to one). v is the struct itself, for moving the in-memory field.
func (p *Plugin) target(db *gorm.DB, model any, name string) (c *XCounter, v reflect.Value, id string, err error) {
	if model == nil {
		return nil, v, "", fmt.Errorf("%w: nil model", ErrUnsupportedModel)
	}
	v = reflect.ValueOf(model)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, v, "", fmt.Errorf("%w: nil %T", ErrUnsupportedModel, model)
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, v, "", fmt.Errorf("%w: %T is not a struct", ErrUnsupportedModel, model)
	}
	m, err := p.metaOfType(db, v.Type())
	if err != nil {
		return nil, v, "", err
	}
	if c, err = m.Counter(name); err != nil {
		return nil, v, "", err
	}
	if id, err = m.Key.ID(v); err != nil {
		return nil, v, "", fmt.Errorf("%s: %w", m.Type, err)
	}
	return c, v, id, nil
}

// XSettable refuses models whose counter field a call cannot set: a struct
// passed by value, or a nil pointer.
func XSettable(model any) error {
	if rv := reflect.ValueOf(model); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: %T: this call sets the counter field, so it needs a non-nil pointer to a struct", ErrUnsupportedModel, model)
	}
	return nil
}

// modelArg resolves an argument that names a model type, such as &Post{}.
func (p *Plugin) modelArg(db *gorm.DB, model any) (*XModel, error) {
	var typ reflect.Type
	if model != nil {
		typ = XStructType(reflect.TypeOf(model))
	}
	if typ == nil {
		return nil, fmt.Errorf("%w: %T is not a struct", ErrUnsupportedModel, model)
	}
	m, err := p.metaOfType(db, typ)
	if err == nil && len(m.Counters) == 0 {
		err = fmt.Errorf("%w: %s has no counters", ErrUnknownCounter, typ)
	}
	return m, err
}

// modelsArg resolves Load/RollUp's models argument: a pointer to a struct,
// or a slice or array (or a pointer to one) of structs or struct pointers.
// elem is the value the records are read from and written to.
func (p *Plugin) modelsArg(db *gorm.DB, models any) (m *XModel, elem reflect.Value, err error) {
	rv := reflect.ValueOf(models)
	if !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return nil, rv, fmt.Errorf("%w: nil models", ErrUnsupportedModel)
	}
	elem = reflect.Indirect(rv)
	if (elem.Kind() == reflect.Struct || elem.Kind() == reflect.Array) && rv.Kind() != reflect.Pointer {
		return nil, rv, fmt.Errorf("%w: %T cannot be changed when passed by value; pass a pointer", ErrUnsupportedModel, models)
	}
	typ := XStructType(rv.Type())
	if typ == nil {
		return nil, rv, fmt.Errorf("%w: %T is not a struct, slice of structs, or pointer to one", ErrUnsupportedModel, models)
	}
	m, err = p.metaOfType(db, typ)
	return m, elem, err
}

// XStructType returns the struct type behind pointers, slices and arrays, or nil.
func XStructType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

func (p *Plugin) buildMeta(db *gorm.DB, s *schema.Schema) (*XModel, error) {
	m := &XModel{Type: s.ModelType, Table: s.Table, ByName: map[string]*XCounter{}}
	for _, f := range s.Fields {
		if _, ok := f.Tag.Lookup("slotted"); ok && f.DBName != "" && (f.Creatable || f.Updatable || f.Readable) {
			m.Columns = append(m.Columns, f.DBName)
		}
	}
	for _, f := range s.Fields {
		tag, ok := f.Tag.Lookup("slotted")
		if !ok {
			continue
		}
		if e, ok, err := parseExtra(f, tag); ok {
			if err != nil {
				return &XModel{Type: m.Type, Columns: m.Columns}, fmt.Errorf("%s.%s: %w", s.Name, f.Name, err)
			}
			m.Extras = append(m.Extras, e)
			continue
		}
		c, err := p.buildCounter(db, s, f, tag)
		if err != nil {
			return &XModel{Type: m.Type, Columns: m.Columns}, err
		}
		for _, name := range []string{c.Name, f.Name} {
			if prev, dup := m.ByName[name]; dup && prev != c {
				return &XModel{Type: m.Type, Columns: m.Columns}, fmt.Errorf("%w: %s: two counters named %q", ErrInvalidConfig, s.Name, name)
			}
			m.ByName[name] = c
		}
		m.Counters = append(m.Counters, c)
	}
	if err := m.resolveExtras(); err != nil {
		return &XModel{Type: m.Type, Columns: m.Columns}, fmt.Errorf("%s: %w", s.Name, err)
	}
	if len(m.Counters) == 0 {
		return m, nil // a model without counters: callbacks skip it; the API reports ErrUnknownCounter
	}
	key, err := newRecordKey(s)
	if err != nil {
		return &XModel{Type: m.Type, Columns: m.Columns}, err
	}
	m.Key = key
	return m, nil
}

func (p *Plugin) buildCounter(db *gorm.DB, s *schema.Schema, f *schema.Field, tag string) (*XCounter, error) {
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
	c := &XCounter{Name: o.name, RecordType: o.recordType, Slots: o.slots, Index: f.StructField.Index, Kind: f.FieldType.Kind()}
	if c.Name == "" {
		c.Name = db.NamingStrategy.ColumnName("", f.Name)
	}
	if c.RecordType == "" {
		c.RecordType = s.Table + "." + c.Name
	}
	if err := XCheckKey("record_type", c.RecordType); err != nil {
		return nil, fmt.Errorf("%w: %s.%s: %v; set type: in the tag", ErrInvalidConfig, s.Name, f.Name, err)
	}
	if c.Slots == 0 {
		c.Slots = p.cfg.Slots
	}
	if c.Bucket, err = bucketing.New(o.Tag, c.RecordType, p.cfg.Location); err != nil {
		return nil, fmt.Errorf("%s.%s: %w", s.Name, f.Name, err)
	}
	if o.cache != "" {
		cf := s.LookUpField(o.cache)
		if cf == nil || cf.DBName == "" {
			return nil, fmt.Errorf("%w: %s.%s: cache column %q is not a column of %s", ErrInvalidConfig, s.Name, f.Name, o.cache, s.Table)
		}
		if k := cf.FieldType.Kind(); k < reflect.Int || k > reflect.Uint64 {
			return nil, fmt.Errorf("%w: %s.%s: cache column %q must be an integer field", ErrInvalidConfig, s.Name, f.Name, o.cache)
		}
		c.Cache, c.CacheIndex = cf.DBName, cf.StructField.Index
	}
	return c, nil
}

// Counter returns the named Counter of the model.
func (m *XModel) Counter(name string) (*XCounter, error) {
	if c, ok := m.ByName[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("%w: %s has no counter %q", ErrUnknownCounter, m.Type, name)
}

// Selected returns the named counters, or all of them when names is empty.
func (m *XModel) Selected(names []string) ([]*XCounter, error) {
	if len(names) == 0 {
		return m.Counters, nil
	}
	out := make([]*XCounter, 0, len(names))
	for _, name := range names {
		c, err := m.Counter(name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Cached returns the named counters (all when names is empty) that have a cache column.
func (m *XModel) Cached(names []string) ([]*XCounter, error) {
	if len(names) == 0 {
		var out []*XCounter
		for _, c := range m.Counters {
			if c.Cache != "" {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: no counter of %s has a cache: column", ErrInvalidConfig, m.Type)
		}
		return out, nil
	}
	out, err := m.Selected(names)
	if err != nil {
		return nil, err
	}
	for i, c := range out {
		if c.Cache == "" {
			return nil, fmt.Errorf("%w: counter %q of %s has no cache: column", ErrInvalidConfig, names[i], m.Type)
		}
	}
	return out, nil
}

// XRecordTypes lists the counters' record types as bind values.
func XRecordTypes(counters []*XCounter) []any {
	types := make([]any, len(counters))
	for i, c := range counters {
		types[i] = c.RecordType
	}
	return types
}
