package slotted

import (
	"fmt"
	"regexp"
	"time"

	"github.com/slotted-go/slotted/internal/errs"

	"github.com/slotted-go/slotted/internal/dialect"

	"github.com/slotted-go/slotted/internal/tables"

	"github.com/slotted-go/slotted/internal/write"
)

const (
	// DefaultSlots is the number of slot rows a counter is spread over unless configured otherwise.
	DefaultSlots = 100
	// DefaultTable is the counter table's name unless configured otherwise.
	DefaultTable = tables.DefaultTable
	// MaxSlots bounds Config.Slots and the `slots:` tag option. Reads sum every slot row, so far more
	// slots than concurrent writers only make reads slower.
	MaxSlots = errs.MaxSlots
	// MaxKeyLen is the longest record_type or record_id, in bytes (the columns are sized to it). Keys
	// are valid UTF-8 without NUL bytes.
	MaxKeyLen = errs.MaxKeyLen
)

// DefaultOnceTable is the once table's name unless Config.OnceTable says otherwise.
const DefaultOnceTable = tables.DefaultOnceTable

// Config configures the plugin. The zero value is ready to use; every field documents its default.
type Config struct {
	// Slots is how many rows one counter is spread over; each write picks one uniformly at random.
	// More slots mean fewer writers waiting on the same row lock, and more rows for a read to sum.
	// A counter's `slots:N` tag option overrides it. Changing it later is safe: reads sum every row
	// that exists, whatever its slot number. Default: 100 (DefaultSlots). Range: 1..MaxSlots.
	Slots int

	// Table is the counter table's name, optionally schema-qualified ("stats.counters").
	// Letters, digits, '_' and '$' only; each part at most 64 bytes (MySQL/MariaDB, SQLite) or 63
	// (PostgreSQL). Default: "slotted_counters" (DefaultTable), after gorm's NamingStrategy
	// TablePrefix when one is set, unless the database has the unprefixed table only (an earlier
	// version's; see docs/production.md).
	Table string

	// OnceTable is the table of AddOnce's keys, named like Table. Default: "slotted_once"
	// (DefaultOnceTable), prefixed as Table is.
	OnceTable string

	// OnceExpireAfter is how long AddOnce keeps a key when the call's OnceOptions set neither
	// ExpireAfter nor KeepForever: after it the key counts as absent (AddOnce applies it again) and
	// the Runner's PruneKeys deletes its row. Every live key is one row of the once table (a like is
	// one row, kept as long as the like should count), so an application whose keys are request ids
	// sets this to how long a client may retry, and gives likes OnceOptions{KeepForever: true}.
	// Default: 0, keys are kept forever.
	OnceExpireAfter time.Duration

	// RequireRecords makes every write that takes a model check that its record exists first (one
	// primary-key SELECT on the primary), returning ErrRecordNotFound and writing nothing when it does
	// not; see MustExist, which turns it on or off per *gorm.DB. Default: false (a write to a missing
	// record creates an orphan counter, which Sweep removes).
	RequireRecords bool

	// DisableAutoMigrate stops db.Use from creating or migrating the counter table; run
	// slotted.Migrate from your own migration step instead. Default: false (migrate on db.Use).
	DisableAutoMigrate bool

	// DisableAutoFill stops counter fields from being filled after First/Take/Last/Find.
	// Per query, slotted.WithFill and slotted.WithoutFill override it. Default: false (fill).
	DisableAutoFill bool

	// MaxRetries is how many times a write outside a transaction is retried after a deadlock,
	// serialization failure, lock wait timeout or SQLITE_BUSY. Inside the caller's transaction
	// nothing is retried: the database has rolled the transaction back, so the error is returned.
	// Default: 5; 10 on a Galera cluster, where writes to one row from different nodes fail
	// certification with a deadlock error. -1 disables retries.
	MaxRetries int

	// MinRetryBackoff and MaxRetryBackoff bound the jittered exponential backoff between retries:
	// before retry n (n = 0, 1, ...) the write sleeps a random time in
	// [0, min(MaxRetryBackoff, MinRetryBackoff<<n)). Defaults: 2ms and max(100ms, MinRetryBackoff);
	// on Galera 5ms and max(500ms, MinRetryBackoff).
	MinRetryBackoff time.Duration
	MaxRetryBackoff time.Duration

	// CausalReads makes Count, CountRef, Load and auto-fill read causally on a Galera cluster:
	// each read first waits until its node has applied every write committed anywhere in the
	// cluster before the read began (wsrep_sync_wait=1 for that statement), so a read right after
	// an acknowledged increment on another node sees it. The wait is about the cluster's apply
	// lag per read. Inside a transaction of yours the server does not wait: such reads are as
	// fresh as the transaction's start. Ignored on other databases. Default: false (a read may
	// miss writes that other nodes acknowledged moments ago; Reset, Compact and RollUp wait
	// anyway).
	CausalReads bool
	// DisableCoalescing writes every Add outside a transaction with a statement of its own. By
	// default writes that arrive while the plugin's statement for the same pool is in flight are
	// summed per counter and written together by the next statement (one multi-row upsert); each
	// caller still returns only after its delta has committed, with that statement's error.
	// Writes inside a transaction are never coalesced. Default: false (coalesce).
	DisableCoalescing bool
	// OutcomeMarkers: every coalesced statement also moves an outcome marker row
	// (docs/outcomes.md), read after a failure that leaves the statement's outcome open (its
	// connection broke): the callers then get nil if it committed and its error if it did not, so
	// a write's error (but its context's, or ErrOutcomeUnknown) always means it was not counted.
	// On by default on MariaDB/MySQL and PostgreSQL; setting it true changes nothing and stays
	// accepted; Plugin.Config reports whether markers are on. Ignored on SQLite (no connection to
	// lose). To turn markers off, set DisableOutcomeMarkers.
	//
	// Deprecated: markers are on by default and setting this changes nothing; set
	// DisableOutcomeMarkers to turn them off, and read !Plugin.Config().DisableOutcomeMarkers
	// to learn whether they are on.
	OutcomeMarkers bool
	// DisableOutcomeMarkers turns outcome markers off: a coalesced statement then writes no marker
	// row (one row fewer per statement, docs/outcomes.md gives the cost), and an error after a lost
	// connection may hide a write that was counted (on MariaDB, most of them). Setting both it and
	// OutcomeMarkers is an ErrInvalidConfig. Default: false (markers on).
	DisableOutcomeMarkers bool

	// DisableReturning keeps the plugin from INSERT … RETURNING and DELETE … RETURNING, which
	// batched AddOnce/RemoveOnce use to learn in one statement which keys were new (MariaDB 10.5+,
	// PostgreSQL, SQLite). Without it each key of a batch is its own INSERT IGNORE / ON CONFLICT DO
	// NOTHING (and RemoveOnce's keys a locking read, then one DELETE), in the same transaction.
	// db.Use turns RETURNING off by itself on MySQL and on MySQL-protocol servers that are not
	// MariaDB 10.5 or later (MySQL 8, TiDB, Vitess); set this when a proxy between the application
	// and MariaDB cannot parse it. Default: false.
	DisableReturning bool

	// DisablePrepared runs the plugin's own statements (the upserts and the sum) unprepared. By
	// default it prepares them once per connection, as the user's statements need not be. Turn it
	// on behind a pooler in transaction mode (PgBouncer pool_mode=transaction, hosted poolers),
	// where a statement prepared on one server connection is missing on the next: see
	// docs/production.md. Default: false, set by db.Use when the PostgreSQL dialector prefers the
	// simple protocol (postgres.Config{PreferSimpleProtocol: true}) or its DSN sets
	// default_query_exec_mode=simple_protocol or exec. Set it yourself when you hand gorm a pool
	// you opened (postgres.Config{Conn: ...}): the plugin cannot see that pool's settings.
	DisablePrepared bool

	// Observer, when set, receives events from inside the plugin (coalesced statements, lock
	// conflicts, Runner passes) for metrics and traces: see Observer and the module
	// github.com/slotted-go/slotted/otel. Default: nil (none).
	Observer Observer

	// MaxBatch bounds the counter rows one coalesced statement writes; a batch of more than 8
	// rows is rounded down to a power of two (the rest goes into the next statement), so each
	// connection prepares at most a dozen statement shapes. Default: 128. Range: 1..1024.
	MaxBatch int

	// MaxInFlight is how many coalesced statements per pool may run at once; writes arriving while
	// that many are in flight queue for the next one. One makes the biggest batches, the least work
	// per write for client and server. A few can do better when each commit waits long on the disk's
	// flush (half the writers queue behind the statement in flight; several let the server's group
	// commit overlap their flushes): see BENCHMARKS.md. Default: 1.
	MaxInFlight int

	// Linger is the longest a coalesced statement waits, before it takes its batch, for the callers of
	// the statement that just ended to queue again, so that it carries every writer of the process
	// rather than every other one (linger.go). It waits at most a quarter of the recent statement time,
	// only after a statement that carried several callers, and a lone writer never waits. Many app
	// instances with a few writers each gain most: ×2 at 8 processes × 8 writers (docs/tuning.md).
	// Negative disables it. Default: 5ms.
	Linger time.Duration

	// BatchTimeout bounds a coalesced statement that carries other callers' writes: it runs on a
	// context no single caller can cancel. Each caller still returns by its own context's end: with
	// nothing written if it was queued, or with its delta possibly landing if it was already in the
	// statement. Default: 30s.
	BatchTimeout time.Duration

	// Now is the clock of bucketed counters (`buckets:` tag option): a write counts into the bucket
	// holding Now(), read once per write (a retried write stays in its bucket), and MaintainBuckets
	// decides from it which buckets are closed or expired. AddOnce's keys expire by it too
	// (ExpireAfter counts from Now(); reads, AddOnce, RemoveOnce and the Runner's PruneKeys
	// compare with it). Tests inject a fake clock here. Default: time.Now.
	Now func() time.Time

	// Location is where bucketed counters' days and months begin (local midnight), unless a
	// counter's `tz:` tag option names another zone. Hour buckets are hours of this zone too; they
	// are labelled in UTC. Default: time.UTC.
	Location *time.Location
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$`)

// withDefaults returns the config with defaults applied (Galera's retry
// defaults when galera is set), or an error wrapping ErrInvalidConfig.
func (c Config) withDefaults(galera bool) (Config, error) {
	retries, minBackoff, maxBackoff := 5, 2*time.Millisecond, 100*time.Millisecond
	if galera {
		retries, minBackoff, maxBackoff = dialect.GaleraMaxRetries, dialect.GaleraMinRetryBackoff, dialect.GaleraMaxRetryBackoff
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.OnceTable == "" {
		c.OnceTable = DefaultOnceTable
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = retries
	case c.MaxRetries == -1:
		c.MaxRetries = 0
	case c.MaxRetries < -1:
		return c, fmt.Errorf("%w: MaxRetries %d (use -1 to disable retries)", ErrInvalidConfig, c.MaxRetries)
	}
	if c.MinRetryBackoff == 0 {
		c.MinRetryBackoff = minBackoff
	}
	if c.MaxRetryBackoff == 0 {
		c.MaxRetryBackoff = max(maxBackoff, c.MinRetryBackoff)
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 128
	}
	if c.MaxBatch < 1 || c.MaxBatch > write.MaxBatchRows {
		return c, fmt.Errorf("%w: MaxBatch %d not in 1..%d", ErrInvalidConfig, c.MaxBatch, write.MaxBatchRows)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 1
	}
	if c.MaxInFlight < 1 {
		return c, fmt.Errorf("%w: MaxInFlight %d", ErrInvalidConfig, c.MaxInFlight)
	}
	switch {
	case c.Linger == 0:
		c.Linger = 5 * time.Millisecond
	case c.Linger < 0:
		c.Linger = 0
	}
	if c.BatchTimeout == 0 {
		c.BatchTimeout = 30 * time.Second
	}
	if c.BatchTimeout < 0 {
		return c, fmt.Errorf("%w: BatchTimeout %v", ErrInvalidConfig, c.BatchTimeout)
	}
	if c.OnceExpireAfter < 0 {
		return c, fmt.Errorf("%w: OnceExpireAfter %v", ErrInvalidConfig, c.OnceExpireAfter)
	}
	if c.OutcomeMarkers && c.DisableOutcomeMarkers {
		return c, fmt.Errorf("%w: OutcomeMarkers and DisableOutcomeMarkers both set", ErrInvalidConfig)
	}
	// Markers are the default: after withDefaults, OutcomeMarkers says whether they are on.
	c.OutcomeMarkers = !c.DisableOutcomeMarkers
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Location == nil {
		c.Location = time.UTC
	}
	if c.Slots < 1 || c.Slots > MaxSlots {
		return c, fmt.Errorf("%w: Slots %d not in 1..%d", ErrInvalidConfig, c.Slots, MaxSlots)
	}
	if !tableName.MatchString(c.Table) {
		return c, fmt.Errorf("%w: Table %q (letters, digits, '_', '$', one optional schema '.')", ErrInvalidConfig, c.Table)
	}
	if !tableName.MatchString(c.OnceTable) || c.OnceTable == c.Table {
		return c, fmt.Errorf("%w: OnceTable %q (letters, digits, '_', '$', one optional schema '.'; not Table)", ErrInvalidConfig, c.OnceTable)
	}
	if c.MinRetryBackoff < 0 || c.MaxRetryBackoff < c.MinRetryBackoff {
		return c, fmt.Errorf("%w: retry backoff %v..%v", ErrInvalidConfig, c.MinRetryBackoff, c.MaxRetryBackoff)
	}
	return c, nil
}

// batchSize applies an option's default and rejects negative values.
func batchSize(n, def int, name string) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 0:
		return 0, fmt.Errorf("%w: %s %d", ErrInvalidConfig, name, n)
	}
	return n, nil
}

// MarkerType is the record type of the plugin's outcome markers (see
// docs/outcomes.md); it is reserved: do not name a counter so.
const MarkerType = write.MarkerType
