// Package countercache keeps a parent's slotted counter equal to the count
// (or a column's sum) of its children, in the same transaction as each change
// of a child: gorm callbacks read the children's rows before and after a
// statement ("images"), turn the difference into row deltas for the write
// path, and lock what they read in key order. Fix recounts from the children.
// Multi-level caches add up a child's own counter cache (SumCounter);
// polymorphic and composite-key parents are handled here too.
//
// The root package declares caches (slotted.CounterCache) and exposes Fix;
// everything else is here.
package countercache

import (
	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/write"
)

// Config is the part of slotted.Config counter caches read.
type Config struct {
	Table           string
	DisablePrepared bool
}

// Caches holds the counter caches declared on one Plugin and runs them.
type Caches struct {
	cfg      Config
	dialect  dialect.Dialect
	sessions *session.Sessions
	models   *meta.Registry
	writes   *write.Engine
	caches   cacheRegistry
}

// New returns the counter caches of one Plugin (none declared yet).
func New(cfg Config, d dialect.Dialect, s *session.Sessions, models *meta.Registry, writes *write.Engine) *Caches {
	return &Caches{cfg: cfg, dialect: d, sessions: s, models: models, writes: writes}
}
