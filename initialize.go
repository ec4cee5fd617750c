package slotted

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/countercache"
	"github.com/slotted-go/slotted/internal/dialect"
	"github.com/slotted-go/slotted/internal/meta"
	"github.com/slotted-go/slotted/internal/session"
	"github.com/slotted-go/slotted/internal/write"

	"github.com/slotted-go/slotted/internal/query"

	"github.com/slotted-go/slotted/internal/callbacks"

	"github.com/slotted-go/slotted/internal/maintain"
)

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
	p.cfg = prefixed(db, p.cfg)
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
	retry := &session.Retrier{MaxRetries: cfg.MaxRetries, MinBackoff: cfg.MinRetryBackoff, MaxBackoff: cfg.MaxRetryBackoff}
	hooks := write.Hooks{RenderBatch: p.renderBatch}
	if cfg.Observer != nil { // without one, no event is built and no hook is called
		retry.OnConflict, hooks.BatchDone = p.conflicted, p.batchDone
	}
	p.sessions = &session.Sessions{Dialect: p.dialect, Table: cfg.Table, DisablePrepared: cfg.DisablePrepared, Own: p.ownStatement, Retry: retry}
	if p.sql, err = render(db, cfg.Table, p.dialect); err != nil {
		return err
	}
	p.writes = write.New(write.Config{Table: cfg.Table, OnceTable: cfg.OnceTable, MaxBatch: cfg.MaxBatch,
		MaxInFlight: cfg.MaxInFlight, Linger: cfg.Linger, BatchTimeout: cfg.BatchTimeout, DisableCoalescing: cfg.DisableCoalescing,
		OutcomeMarkers: !cfg.DisableOutcomeMarkers, Now: cfg.Now}, p.dialect, p.sessions,
		write.Statements{Upsert: p.sql.Upsert, UpsertArgs: p.sql.UpsertArgs}, hooks)
	p.caches = countercache.New(countercache.Config{Table: cfg.Table, DisablePrepared: cfg.DisablePrepared}, p.dialect, p.sessions, p.models, p.writes)
	if p.causalReads() {
		p.sql.Sum = dialect.SyncWait + " " + p.sql.Sum
	}
	// After the causal wait is in the sum: the reader keeps the statements it was given.
	p.reads = query.New(query.Config{Table: cfg.Table, OnceTable: cfg.OnceTable, CausalReads: p.causalReads(), Now: cfg.Now}, p.dialect, p.sessions, p.sql)
	if !cfg.DisableAutoMigrate {
		if err := p.migrate(db); err != nil {
			return fmt.Errorf("slotted: migrating %s and %s: %w", cfg.Table, cfg.OnceTable, err)
		}
	}
	p.maint = maintain.New(maintain.Config{Table: cfg.Table, OnceTable: cfg.OnceTable}, p.dialect, p.sessions)
	p.hooks = &callbacks.Callbacks{Table: cfg.Table, Dialect: p.dialect, DisableAutoFill: cfg.DisableAutoFill, Models: p.models,
		Sessions: p.sessions, Reads: p.reads, Caches: p.caches, FillExtras: p.fillExtras}
	return p.hooks.Register(db)
}

// batchDone reports a coalesced statement that began at start and returns
// its error. Called as one expression around the statement, so its
// arguments are evaluated left to right: start before the statement runs.
func (p *Plugin) batchDone(ctx context.Context, start time.Time, rows, writes int, err error) error {
	p.cfg.observe(ctx, Event{Kind: EventBatch, Start: start, End: time.Now(), Rows: rows, Writes: writes, Err: err})
	return err
}

// conflicted reports a lock conflict met by withRetry.
func (p *Plugin) conflicted(ctx context.Context, kind Conflict, attempt int, retried bool, err error) {
	now := time.Now()
	p.cfg.observe(ctx, Event{Kind: EventConflict, Start: now, End: now, Conflict: kind, Attempt: attempt, Retried: retried, Err: err})
}
