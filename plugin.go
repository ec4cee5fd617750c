package slotted

import (
	"fmt"
	"reflect"
	"sync"

	"gorm.io/gorm"
)

const pluginName = "slotted"

// Plugin is the gorm plugin. Create it with New and register it with db.Use.
// One Plugin serves one *gorm.DB (and every session and transaction derived from it).
type Plugin struct {
	cfg      Config
	dialect  dialect
	sql      statements
	models   sync.Map // reflect.Type -> *modelResult: metadata is built once per model type
	prepared sync.Map // *sql.DB -> *stmtPool: the plugin's own prepared statements
	sumOnce  sync.Once
	sumFinal string // the sum as the driver gets it (see sumSQL)
	stats    stats
	db       *gorm.DB // the DB it was registered on: one Plugin serves one DB

	caches     cacheRegistry   // counter caches declared with CounterCache (countercache.go)
	batch      batchStatements // multi-row upserts by shape (batch.go)
	coalescers sync.Map        // coalesceKey -> *coalescer (coalesce.go)
	batching   batchStats
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
	p.dialect = dialectOf(db.Dialector)
	if p.dialect.name == "mysql" {
		var err error
		if p.dialect.galera, err = detectGalera(db); err != nil {
			return fmt.Errorf("slotted: asking the server for wsrep_on (Galera): %w", err)
		}
		if p.dialect.returning, err = detectReturning(db); err != nil {
			return fmt.Errorf("slotted: asking the server for its version: %w", err)
		}
	}
	if p.cfg.DisableReturning {
		p.dialect.returning = false
	}
	p.cfg = p.prefixed(db, p.cfg)
	cfg, err := p.cfg.withDefaults(p.dialect.galera)
	if err != nil {
		return err
	}
	if p.dialect.name == "postgres" && prefersUnprepared(db.Dialector) {
		cfg.DisablePrepared = true
	}
	p.cfg = cfg
	if err := checkTableName(cfg.Table, p.dialect.name); err != nil {
		return err
	}
	if err := checkTableName(cfg.OnceTable, p.dialect.name); err != nil {
		return err
	}
	if p.sql, err = render(db, cfg.Table, p.dialect); err != nil {
		return err
	}
	if p.causalReads() {
		p.sql.sum = syncWait + " " + p.sql.sum
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
func (p *Plugin) causalReads() bool { return p.dialect.galera && p.cfg.CausalReads }

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

// dialect is what the plugin's SQL depends on in the database it runs on,
// decided once at Initialize so that no code path asks the dialector by name.
type dialect struct {
	name string // gorm's Dialector.Name(): "mysql", "postgres", "sqlite", ...
	// lockingReads: a read that decides a write takes row locks (SELECT ... FOR
	// UPDATE). Not on SQLite, which has no row locks: its BEGIN IMMEDIATE (or
	// the delete's transaction) already holds the database's write lock.
	lockingReads bool
	// immediateTx: write transactions open with BEGIN IMMEDIATE (SQLite), not
	// at READ COMMITTED isolation.
	immediateTx bool
	// rowCompare: a row comparison (a, b) > (?, ?) is one index condition
	// (PostgreSQL), so a keyset scan can start at the resume point.
	rowCompare bool
	// withoutRowID: the counter table is created WITHOUT ROWID (SQLite), so the
	// primary key is the table rather than a second B-tree beside it.
	withoutRowID bool
	// galera: a MariaDB Galera node (wsrep_on = ON), asked at Initialize. Write
	// transactions wait for the node to catch up with the cluster first, and
	// the retry defaults are Galera's (see galera.go).
	galera bool
	// checkedAdd: the database would not fail an addition past int64 by itself
	// (SQLite makes it a REAL), so upserts check the sum (addExpr, overflow.go).
	checkedAdd bool
	// valuesFunc: an upsert reads the row it tried to insert as VALUES(col)
	// (MySQL/MariaDB's ON DUPLICATE KEY UPDATE), not as excluded.col.
	valuesFunc bool
	// textType is what CAST(key AS ...) needs to compare a parent's key with
	// record_id (OrderBy's join): CHAR on MySQL, TEXT elsewhere.
	textType string
	// bigResult: windowed rankings group with SELECT SQL_BIG_RESULT
	// (MySQL/MariaDB), by sorting rather than in a temporary table that spills
	// to disk past tmp_table_size (a week's top of 100k records: 41 s -> 6 s).
	bigResult bool
	// returning: INSERT … RETURNING and DELETE … RETURNING (MariaDB 10.5+,
	// PostgreSQL, SQLite 3.35+; not MySQL, TiDB or Vitess), asked at
	// Initialize on MySQL-protocol servers; off with Config.DisableReturning.
	returning bool
}

func dialectOf(d gorm.Dialector) dialect {
	name := d.Name()
	sqlite := name == "sqlite"
	return dialect{
		name:         name,
		lockingReads: !sqlite,
		immediateTx:  sqlite,
		rowCompare:   name == "postgres",
		withoutRowID: sqlite,
		checkedAdd:   sqlite,
		valuesFunc:   name == "mysql",
		textType:     textType(name),
		bigResult:    name == "mysql",
		returning:    name == "postgres" || sqlite, // MySQL's is asked at Initialize
	}
}
