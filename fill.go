package slotted

import (
	"gorm.io/gorm"
)

const fillSetting = "slotted:fill"

// WithoutFill turns auto-fill off for queries run on the returned *gorm.DB:
//
//	slotted.WithoutFill(db).Find(&posts) // counter fields stay as they are; no counter query
func WithoutFill(db *gorm.DB) *gorm.DB { return db.Set(fillSetting, false) }

// WithFill turns auto-fill on for queries run on the returned *gorm.DB, even
// when Config.DisableAutoFill is set.
func WithFill(db *gorm.DB) *gorm.DB { return db.Set(fillSetting, true) }

func (p *Plugin) registerCallbacks(db *gorm.DB) error {
	q := db.Callback().Query()
	if err := q.Before("gorm:query").Register("slotted:omit_query", p.omitColumns); err != nil {
		return err
	}
	// After preload, before AfterFind hooks, so hooks see the counters.
	if err := q.After("gorm:preload").Before("gorm:after_query").Register("slotted:fill", p.autoFill); err != nil {
		return err
	}
	if err := db.Callback().Create().Before("gorm:create").Register("slotted:omit_create", p.omitColumns); err != nil {
		return err
	}
	if err := db.Callback().Update().Before("gorm:update").Register("slotted:omit_update", p.omitColumns); err != nil {
		return err
	}
	return p.registerCleanup(db)
}

// omitColumns keeps counter fields that lack gorm:"-" out of the model's own
// SQL, so a counter is never written to or read from the parent table.
func (p *Plugin) omitColumns(db *gorm.DB) {
	if db.Error != nil || db.Statement.Schema == nil {
		return
	}
	m, _ := p.metaForSchema(db, db.Statement.Schema) // a bad tag is reported where counters are used
	if m == nil || len(m.columns) == 0 {
		return
	}
	db.Statement.Omits = append(db.Statement.Omits, m.columns...)
}

// autoFill fills the counter fields of a query's results with one batched read.
func (p *Plugin) autoFill(db *gorm.DB) {
	if db.Error != nil || db.Statement.Schema == nil || db.RowsAffected == 0 {
		return
	}
	on := !p.cfg.DisableAutoFill
	if v, ok := db.Get(fillSetting); ok {
		on, _ = v.(bool)
	}
	if !on {
		return
	}
	// Only results of the model's own type have counter fields: not Count, Pluck, a DTO or a map.
	rv := db.Statement.ReflectValue
	if !rv.IsValid() || structType(rv.Type()) != db.Statement.Schema.ModelType {
		return
	}
	m, err := p.metaForSchema(db, db.Statement.Schema)
	if err != nil {
		_ = db.AddError(err)
		return
	}
	if len(m.counters) == 0 {
		return
	}
	if err := p.fill(db, m, m.counters, rv, false); err != nil {
		_ = db.AddError(err)
	}
}
