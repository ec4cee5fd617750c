package slotted

import (
	"fmt"
	"reflect"
	"sync"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/session"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/write"

	"github.com/slotted-go/slotted/internal/countercache"
)

const pluginName = "slotted"

// Plugin is the gorm plugin. Create it with New and register it with db.Use.
// One Plugin serves one *gorm.DB (and every session and transaction derived from it).
type Plugin struct {
	cfg      Config
	dialect  dialect.Dialect
	sessions *session.Sessions // routing, prepared statements, own transactions, retries
	writes   *write.Engine     // the one write path: row deltas, coalesced, marked
	sql      statements
	models   *meta.Registry // model metadata, built once per type
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

// Initialize implements gorm.Plugin: it validates the config, renders the
// plugin's statements for the database's dialect, migrates the counter table
// (unless disabled) and registers the auto-fill callbacks.
func (p *Plugin) Initialize(db *gorm.DB) error {
	if p.db != nil {
		// gorm.Open initializes a config's plugins again for every connection
		// opened from a copy of it: dbresolver does so for its sources and
		// replicas, which are only connection pools of the DB already set up.
		if reflect.ValueOf(db.Config.Plugins).Pointer() == reflect.ValueOf(p.db.Config.Plugins).Pointer() {
			return nil
		}
		return fmt.Errorf("%w: this Plugin is registered on another *gorm.DB already; call slotted.New for each", ErrInvalidConfig)
	}
	p.db = db
	if _, err := p.cfg.withDefaults(false); err != nil { // before any round trip
		return err
	}
	p.dialect = dialect.Of(db.Dialector)
	if err := p.dialect.Detect(session.Primary(db, "").Session(&gorm.Session{NewDB: true})); err != nil {
		return fmt.Errorf("slotted: asking the server what it is (its version, Galera's wsrep_on): %w", err)
	}
	if p.cfg.DisableReturning {
		p.dialect.Returning = false
	}
	p.cfg = p.prefixed(db, p.cfg)
	cfg, err := p.cfg.withDefaults(p.dialect.Galera)
	if err != nil {
		return err
	}
	if p.dialect.MayPreferUnprepared && dialect.PrefersUnprepared(db.Dialector) {
		cfg.DisablePrepared = true
	}
	p.cfg = cfg
	if err := p.dialect.CheckTableName(cfg.Table); err != nil {
		return err
	}
	if err := p.dialect.CheckTableName(cfg.OnceTable); err != nil {
		return err
	}
	p.models = &meta.Registry{Slots: cfg.Slots, Location: cfg.Location, SeriesType: reflect.TypeOf([]Bucket(nil))}
	p.sessions = &session.Sessions{Dialect: p.dialect, Table: cfg.Table, DisablePrepared: cfg.DisablePrepared, Own: p.ownStatement,
		Retry: &session.Retrier{MaxRetries: cfg.MaxRetries, MinBackoff: cfg.MinRetryBackoff, MaxBackoff: cfg.MaxRetryBackoff, OnConflict: p.conflicted}}
	if p.sql, err = render(db, cfg.Table, p.dialect); err != nil {
		return err
	}
	p.writes = write.New(write.Config{Table: cfg.Table, OnceTable: cfg.OnceTable, Slots: cfg.Slots, MaxBatch: cfg.MaxBatch,
		MaxInFlight: cfg.MaxInFlight, Linger: cfg.Linger, BatchTimeout: cfg.BatchTimeout, DisableCoalescing: cfg.DisableCoalescing,
		OutcomeMarkers: cfg.OutcomeMarkers, Now: cfg.Now}, p.dialect, p.sessions,
		write.Statements{Upsert: p.sql.upsert, UpsertArgs: p.sql.upsertArgs}, write.Hooks{RenderBatch: p.renderBatch, BatchDone: p.batchDone})
	p.caches = countercache.New(countercache.Config{Table: cfg.Table, DisablePrepared: cfg.DisablePrepared}, p.dialect, p.sessions, p.models, p.writes)
	if p.causalReads() {
		p.sql.sum = dialect.SyncWait + " " + p.sql.sum
	}
	if !cfg.DisableAutoMigrate {
		if err := p.migrate(db); err != nil {
			return fmt.Errorf("slotted: migrating %s and %s: %w", cfg.Table, cfg.OnceTable, err)
		}
	}
	return p.registerCallbacks(db)
}

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
