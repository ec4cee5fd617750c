package slotted

import (
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/write"

	"github.com/slotted-go/slotted/internal/countercache"

	"github.com/slotted-go/slotted/internal/query"

	"github.com/slotted-go/slotted/internal/callbacks"

	"github.com/slotted-go/slotted/internal/maintain"
)

const pluginName = "slotted"

// Plugin is the gorm plugin. Create it with New and register it with db.Use.
// One Plugin serves one *gorm.DB (and every session and transaction derived from it).
type Plugin struct {
	cfg      Config
	dialect  dialect.Dialect
	sessions *session.Sessions    // routing, prepared statements, own transactions, retries
	writes   *write.Engine        // the one write path: row deltas, coalesced, marked
	reads    *query.Reader        // sums, loads, windows, rankings
	hooks    *callbacks.Callbacks // omit, auto-fill, delete cleanup
	maint    *maintain.Maintainer // compaction, retention, pruning, orphans
	sql      write.Statements     // the upsert and the sum, rendered at Initialize (clause.go)
	models   *meta.Registry       // model metadata, built once per type
	sumOnce  sync.Once
	sumFinal string // the sum as the driver gets it (see sumSQL)
	stats    stats
	db       *gorm.DB // the DB it was registered on: one Plugin serves one DB

	caches *countercache.Caches // counter caches declared with CounterCache
}

// New returns a plugin for db.Use. The config is validated by db.Use, which
// returns an error wrapping ErrInvalidConfig when a field is out of range.
//
//	db.Use(slotted.New(slotted.Config{}))
func New(cfg Config) *Plugin { return &Plugin{cfg: cfg} }

// Name implements gorm.Plugin.
func (p *Plugin) Name() string { return pluginName }

// Config returns the plugin's configuration with defaults applied (after db.Use).
func (p *Plugin) Config() Config { return p.cfg }

// causalReads: Count and fill reads wait for the Galera node to catch up.
func (p *Plugin) causalReads() bool { return p.dialect.Galera && p.cfg.CausalReads }

// pluginOf finds the plugin registered on db.
func pluginOf(db *gorm.DB) (*Plugin, error) {
	if db == nil || db.Config == nil {
		return nil, ErrNotRegistered
	}
	p, ok := db.Config.Plugins[pluginName].(*Plugin)
	if !ok {
		return nil, ErrNotRegistered
	}
	if db.Error != nil {
		return nil, db.Error
	}
	return p, nil
}

// Table returns db scoped to the counter table, for reading slot rows directly:
//
//	var rows []slotted.SlottedCounter
//	slotted.Table(db).Where("record_type = ?", "posts.likes").Find(&rows)
func Table(db *gorm.DB) *gorm.DB {
	p, err := pluginOf(db)
	if err != nil {
		db = db.Session(&gorm.Session{})
		_ = db.AddError(err)
		return db
	}
	return db.Table(p.cfg.Table)
}

// stats are the counts kept outside session.Retrier (which keeps Retries
// and Conflicts).
type stats struct {
	onceApplied, onceDuplicates atomic.Uint64
}

// liveOf is pluginOf for the calls that run statements: it refuses DryRun.
func liveOf(db *gorm.DB) (*Plugin, error) {
	p, err := pluginOf(db)
	if err == nil && db.DryRun {
		return nil, ErrDryRun
	}
	return p, err
}
