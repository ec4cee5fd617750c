// Package meta is what the plugin knows about a model type, in the role
// gorm's schema package plays for gorm: its counters (from the `slotted`
// struct tags), its record key (how a primary key becomes record_id), the
// fields filled beside the counters (window:, series:, applied), and how to
// read and set counter fields by reflection. It is built once per type and
// cached in a Registry, so the hot path parses no tags.
package meta
