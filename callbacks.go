package slotted

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/session"
)

// WithoutFill turns auto-fill off for queries run on the returned *gorm.DB:
//
//	slotted.WithoutFill(db).Find(&posts) // counter fields stay as they are; no counter query
func WithoutFill(db *gorm.DB) *gorm.DB { return session.WithoutFill(db) }

// WithFill turns auto-fill on for queries run on the returned *gorm.DB, even
// when Config.DisableAutoFill is set.
func WithFill(db *gorm.DB) *gorm.DB { return db.Set(session.FillSetting, true) }
