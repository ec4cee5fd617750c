package slotted

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"
)

// rankArgs resolves the arguments every ranking shares: the plugin, the
// model's metadata and its counter, and n >= 1 (what names the call).
func rankArgs(db *gorm.DB, model any, counter string, n int, what string) (*Plugin, *meta.Model, *meta.Counter, error) {
	p, err := pluginOf(db)
	if err != nil {
		return nil, nil, nil, err
	}
	if n < 1 {
		return nil, nil, nil, fmt.Errorf("%w: %s n %d", ErrInvalidArgument, what, n)
	}
	m, err := p.models.ModelArg(db, model)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := m.Counter(counter)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, m, c, nil
}
