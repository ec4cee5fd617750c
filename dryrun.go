package slotted

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/errs"
)

// ErrDryRun is returned by the plugin's writes, reads and maintenance calls on
// a DB in gorm's DryRun mode (gorm.Session{DryRun: true}, gorm.Config.DryRun).
// gorm's DryRun builds statements without running them; a counter call
// cannot do its work that way: a write would report an increment that never
// happened (and move the model's field), a read would report 0 for a counter
// it never read. The call runs nothing, and the model's fields are left as
// they were. Scopes (OrderBy, WhereCounter), Table and RefOf keep working under
// DryRun, as they only build SQL; auto-fill and counter caches skip a dry
// run's statements as gorm skips running them.
var ErrDryRun = errs.ErrDryRun

// liveOf is pluginOf for the calls that run statements: it refuses DryRun.
func liveOf(db *gorm.DB) (*Plugin, error) {
	p, err := pluginOf(db)
	if err == nil && db.DryRun {
		return nil, ErrDryRun
	}
	return p, err
}
