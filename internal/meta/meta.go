package meta

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted/internal/bucketing"
	"github.com/slotted-go/slotted/internal/errs"
)

// The plugin's arguments name models in three ways; each has one lookup:
//
//	Target      one record and one counter, e.g. (&post, "likes"): Add, Count, Compact, Reset, RefOf
//	ModelArg    a model type, e.g. &Post{}: Sweep, RollUpAll
//	ModelsArg   records to fill or roll up, e.g. &posts: Load, RollUp
//
// All of them end in OfType or, in callbacks that hold gorm's parsed
// schema already, OfSchema: the per-type cache.

// Registry builds and caches the metadata of model types: one per Plugin.
type Registry struct {
	// Slots and Location are the defaults of a counter's slots: and tz:
	// options (Config.Slots, Config.Location).
	Slots    int
	Location *time.Location
	// SeriesType is the type a series: field must have ([]slotted.Bucket).
	SeriesType reflect.Type

	models sync.Map // reflect.Type -> *modelResult: metadata is built once per model type
}

// Model is what the plugin knows about one model type. It is built once
// per type and cached on the plugin, so the hot path does no tag parsing and
// no schema lookups.
type Model struct {
	Type     reflect.Type // the struct type
	Table    string
	Key      Key
	Counters []*Counter
	ByName   map[string]*Counter // tag name and Go field name
	// Columns are counter fields that gorm still maps to a column (no gorm:"-"):
	// they are omitted from the model's INSERT, UPDATE and SELECT statements.
	Columns []string
	Extras  []*Extra // fields filled beside the counters: window:, series:, applied (window.go)
}

// Counter is one Counter field of a model.
type Counter struct {
	Name       string // tag name, e.g. "likes"
	RecordType string // e.g. "posts.likes"
	Slots      int
	Index      []int // struct field index path
	Kind       reflect.Kind
	Cache      string // column of the parent table RollUp writes the total to, or ""
	CacheIndex []int  // that column's struct field

	Bucket *bucketing.Scheme // the buckets: option (internal/bucketing), or nil
}

// modelResult caches a failed build too: a model's tags do not change at run time.
type modelResult struct {
	meta *Model
	err  error
}

// OfType returns the metadata of a struct type, parsing the gorm schema on first use.
func (r *Registry) OfType(db *gorm.DB, typ reflect.Type) (*Model, error) {
	if res, ok := r.models.Load(typ); ok {
		res := res.(*modelResult)
		return res.meta, res.err
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(reflect.New(typ).Interface()); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errs.ErrUnsupportedModel, typ, err)
	}
	return r.OfSchema(db, stmt.Schema)
}

// OfSchema is OfType for callbacks, which already hold the parsed schema.
// On a bad tag it returns the error and a meta holding only columns, so the
// omit callbacks still keep counter fields out of the parent table's SQL.
func (r *Registry) OfSchema(db *gorm.DB, s *schema.Schema) (*Model, error) {
	if res, ok := r.models.Load(s.ModelType); ok {
		res := res.(*modelResult)
		return res.meta, res.err
	}
	m, err := r.build(db, s)
	res, _ := r.models.LoadOrStore(s.ModelType, &modelResult{m, err})
	return res.(*modelResult).meta, res.(*modelResult).err
}

// PointerArg checks a write's model argument: writes move the model's field
// too, so it must be a non-nil pointer to a struct.
func PointerArg(model any) error {
	if rv := reflect.ValueOf(model); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: %T: writes need a non-nil pointer to a struct", errs.ErrUnsupportedModel, model)
	}
	return nil
}

// Target finds the counter and record_id of one model value (a struct or a
// pointer to one). v is the struct itself, for moving the in-memory field.
func (r *Registry) Target(db *gorm.DB, model any, name string) (c *Counter, v reflect.Value, id string, err error) {
	if model == nil {
		return nil, v, "", fmt.Errorf("%w: nil model", errs.ErrUnsupportedModel)
	}
	v = reflect.ValueOf(model)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, v, "", fmt.Errorf("%w: nil %T", errs.ErrUnsupportedModel, model)
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, v, "", fmt.Errorf("%w: %T is not a struct", errs.ErrUnsupportedModel, model)
	}
	m, err := r.OfType(db, v.Type())
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

// Settable refuses models whose counter field a call cannot set: a struct
// passed by value, or a nil pointer.
func Settable(model any) error {
	if rv := reflect.ValueOf(model); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: %T: this call sets the counter field, so it needs a non-nil pointer to a struct", errs.ErrUnsupportedModel, model)
	}
	return nil
}

// ModelArg resolves an argument that names a model type, such as &Post{}.
func (r *Registry) ModelArg(db *gorm.DB, model any) (*Model, error) {
	var typ reflect.Type
	if model != nil {
		typ = StructType(reflect.TypeOf(model))
	}
	if typ == nil {
		return nil, fmt.Errorf("%w: %T is not a struct", errs.ErrUnsupportedModel, model)
	}
	m, err := r.OfType(db, typ)
	if err == nil && len(m.Counters) == 0 {
		err = fmt.Errorf("%w: %s has no counters", errs.ErrUnknownCounter, typ)
	}
	return m, err
}

// ModelsArg resolves Load/RollUp's models argument: a pointer to a struct,
// or a slice or array (or a pointer to one) of structs or struct pointers.
// elem is the value the records are read from and written to.
func (r *Registry) ModelsArg(db *gorm.DB, models any) (m *Model, elem reflect.Value, err error) {
	rv := reflect.ValueOf(models)
	if !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return nil, rv, fmt.Errorf("%w: nil models", errs.ErrUnsupportedModel)
	}
	elem = reflect.Indirect(rv)
	if (elem.Kind() == reflect.Struct || elem.Kind() == reflect.Array) && rv.Kind() != reflect.Pointer {
		return nil, rv, fmt.Errorf("%w: %T cannot be changed when passed by value; pass a pointer", errs.ErrUnsupportedModel, models)
	}
	typ := StructType(rv.Type())
	if typ == nil {
		return nil, rv, fmt.Errorf("%w: %T is not a struct, slice of structs, or pointer to one", errs.ErrUnsupportedModel, models)
	}
	m, err = r.OfType(db, typ)
	return m, elem, err
}

// StructType returns the struct type behind pointers, slices and arrays, or nil.
func StructType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

func (r *Registry) build(db *gorm.DB, s *schema.Schema) (*Model, error) {
	m := &Model{Type: s.ModelType, Table: s.Table, ByName: map[string]*Counter{}}
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
		if e, ok, err := parseExtra(f, tag, r.SeriesType); ok {
			if err != nil {
				return &Model{Type: m.Type, Columns: m.Columns}, fmt.Errorf("%s.%s: %w", s.Name, f.Name, err)
			}
			m.Extras = append(m.Extras, e)
			continue
		}
		c, err := r.buildCounter(db, s, f, tag)
		if err != nil {
			return &Model{Type: m.Type, Columns: m.Columns}, err
		}
		for _, name := range []string{c.Name, f.Name} {
			if prev, dup := m.ByName[name]; dup && prev != c {
				return &Model{Type: m.Type, Columns: m.Columns}, fmt.Errorf("%w: %s: two counters named %q", errs.ErrInvalidConfig, s.Name, name)
			}
			m.ByName[name] = c
		}
		m.Counters = append(m.Counters, c)
	}
	if err := m.resolveExtras(); err != nil {
		return &Model{Type: m.Type, Columns: m.Columns}, fmt.Errorf("%s: %w", s.Name, err)
	}
	if len(m.Counters) == 0 {
		return m, nil // a model without counters: callbacks skip it; the API reports errs.ErrUnknownCounter
	}
	key, err := newRecordKey(s)
	if err != nil {
		return &Model{Type: m.Type, Columns: m.Columns}, err
	}
	m.Key = key
	return m, nil
}

func (r *Registry) buildCounter(db *gorm.DB, s *schema.Schema, f *schema.Field, tag string) (*Counter, error) {
	o, err := parseTag(tag)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", s.Name, f.Name, err)
	}
	switch f.FieldType.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return nil, fmt.Errorf("%w: %s.%s: a counter field must be an integer, not %s", errs.ErrInvalidConfig, s.Name, f.Name, f.FieldType)
	}
	c := &Counter{Name: o.name, RecordType: o.recordType, Slots: o.slots, Index: f.StructField.Index, Kind: f.FieldType.Kind()}
	if c.Name == "" {
		c.Name = db.NamingStrategy.ColumnName("", f.Name)
	}
	if c.RecordType == "" {
		c.RecordType = s.Table + "." + c.Name
	}
	if err := CheckKey("record_type", c.RecordType); err != nil {
		return nil, fmt.Errorf("%w: %s.%s: %v; set type: in the tag", errs.ErrInvalidConfig, s.Name, f.Name, err)
	}
	if c.Slots == 0 {
		c.Slots = r.Slots
	}
	if c.Bucket, err = bucketing.New(o.Tag, c.RecordType, r.Location); err != nil {
		return nil, fmt.Errorf("%s.%s: %w", s.Name, f.Name, err)
	}
	if o.cache != "" {
		cf := s.LookUpField(o.cache)
		if cf == nil || cf.DBName == "" {
			return nil, fmt.Errorf("%w: %s.%s: cache column %q is not a column of %s", errs.ErrInvalidConfig, s.Name, f.Name, o.cache, s.Table)
		}
		if k := cf.FieldType.Kind(); k < reflect.Int || k > reflect.Uint64 {
			return nil, fmt.Errorf("%w: %s.%s: cache column %q must be an integer field", errs.ErrInvalidConfig, s.Name, f.Name, o.cache)
		}
		c.Cache, c.CacheIndex = cf.DBName, cf.StructField.Index
	}
	return c, nil
}

// Counter returns the named Counter of the model.
func (m *Model) Counter(name string) (*Counter, error) {
	if c, ok := m.ByName[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("%w: %s has no counter %q", errs.ErrUnknownCounter, m.Type, name)
}

// Selected returns the named counters, or all of them when names is empty.
func (m *Model) Selected(names []string) ([]*Counter, error) {
	if len(names) == 0 {
		return m.Counters, nil
	}
	out := make([]*Counter, 0, len(names))
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
func (m *Model) Cached(names []string) ([]*Counter, error) {
	if len(names) == 0 {
		var out []*Counter
		for _, c := range m.Counters {
			if c.Cache != "" {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: no counter of %s has a cache: column", errs.ErrInvalidConfig, m.Type)
		}
		return out, nil
	}
	out, err := m.Selected(names)
	if err != nil {
		return nil, err
	}
	for i, c := range out {
		if c.Cache == "" {
			return nil, fmt.Errorf("%w: counter %q of %s has no cache: column", errs.ErrInvalidConfig, names[i], m.Type)
		}
	}
	return out, nil
}

// RecordTypes lists the counters' record types as bind values.
func RecordTypes(counters []*Counter) []any {
	types := make([]any, len(counters))
	for i, c := range counters {
		types[i] = c.RecordType
	}
	return types
}

// Records groups the structs of one load by record_id, in first-seen order.
type Records struct {
	IDs  []string
	ByID map[string][]reflect.Value
}

func (m *Model) Records(v reflect.Value, strict bool) (Records, error) {
	rs := Records{ByID: map[string][]reflect.Value{}}
	var err error
	EachStruct(v, func(s reflect.Value) {
		id, idErr := m.Key.ID(s)
		if idErr != nil {
			if strict && err == nil {
				err = fmt.Errorf("%s: %w", m.Type, idErr)
			}
			return
		}
		if _, seen := rs.ByID[id]; !seen {
			rs.IDs = append(rs.IDs, id)
		}
		rs.ByID[id] = append(rs.ByID[id], s)
	})
	return rs, err
}

// EachStruct calls fn for every addressable struct in v, skipping nil pointers.
func EachStruct(v reflect.Value, fn func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			EachStruct(v.Elem(), fn)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			EachStruct(v.Index(i), fn)
		}
	case reflect.Struct:
		fn(v)
	}
}

// ExtrasNamed refuses a name (Go field or counter name) that names no extra
// field of the kinds given: a typo would otherwise fill nothing, silently.
func (m *Model) ExtrasNamed(names []string, kinds ...ExtraKind) error {
	for _, n := range names {
		if !slices.ContainsFunc(m.Extras, func(e *Extra) bool {
			return slices.Contains(kinds, e.Kind) && e.In([]string{n})
		}) {
			return fmt.Errorf("%w: %s has no %s field named %q", errs.ErrUnknownCounter, m.Type, kindNames(kinds), n)
		}
	}
	return nil
}

// Bucketed returns the named counters (all Bucketed ones when names is empty), which must have buckets.
func (m *Model) Bucketed(names []string) ([]*Counter, error) {
	if len(names) == 0 {
		var out []*Counter
		for _, c := range m.Counters {
			if c.Bucket != nil {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: no counter of %s has a buckets: tag option", errs.ErrInvalidArgument, m.Type)
		}
		return out, nil
	}
	out, err := m.Selected(names)
	if err != nil {
		return nil, err
	}
	for _, c := range out {
		if c.Bucket == nil {
			return nil, NotBucketed(c)
		}
	}
	return out, nil
}
func kindNames(kinds []ExtraKind) string {
	if slices.Contains(kinds, ExtraApplied) {
		return "applied"
	}
	return "window: or series:"
}
func NotBucketed(c *Counter) error {
	return fmt.Errorf("%w: counter %q has no buckets: tag option", errs.ErrInvalidArgument, c.Name)
}

// BucketTypes returns the record_types of counter c's buckets.
func (c *Counter) BucketTypes(buckets []bucketing.Bucket) []string {
	types := make([]string, len(buckets))
	for i, b := range buckets {
		types[i] = bucketing.Type(c.RecordType, b.Label)
	}
	return types
}
