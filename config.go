package slotted

import (
	"fmt"
	"regexp"
	"time"
)

const (
	// DefaultSlots is the number of slot rows a counter is spread over unless configured otherwise.
	DefaultSlots = 100
	// DefaultTable is the counter table's name unless configured otherwise.
	DefaultTable = "slotted_counters"
	// MaxSlots bounds Config.Slots and the `slots:` tag option. Reads sum every slot row, so far more
	// slots than concurrent writers only make reads slower.
	MaxSlots = 1 << 16
	// MaxKeyLen is the longest record_type or record_id, in bytes (the columns are sized to it).
	MaxKeyLen = 128
)

// Config configures the plugin. The zero value is ready to use; every field documents its default.
type Config struct {
	// Slots is how many rows one counter is spread over; each write picks one uniformly at random.
	// More slots mean fewer writers waiting on the same row lock, and more rows for a read to sum.
	// A counter's `slots:N` tag option overrides it. Changing it later is safe: reads sum every row
	// that exists, whatever its slot number. Default: 100 (DefaultSlots). Range: 1..MaxSlots.
	Slots int

	// Table is the counter table's name, optionally schema-qualified ("stats.counters").
	// Letters, digits, '_' and '$' only. Default: "slotted_counters" (DefaultTable).
	Table string

	// DisableAutoMigrate stops db.Use from creating or migrating the counter table; run
	// slotted.Migrate from your own migration step instead. Default: false (migrate on db.Use).
	DisableAutoMigrate bool

	// DisableAutoFill stops counter fields from being filled after First/Take/Last/Find.
	// Per query, slotted.WithFill and slotted.WithoutFill override it. Default: false (fill).
	DisableAutoFill bool

	// MaxRetries is how many times a write outside a transaction is retried after a deadlock,
	// serialization failure, lock wait timeout or SQLITE_BUSY. Inside the caller's transaction
	// nothing is retried: the database has rolled the transaction back, so the error is returned.
	// Default: 5. -1 disables retries.
	MaxRetries int

	// MinRetryBackoff and MaxRetryBackoff bound the jittered exponential backoff between retries:
	// before retry n (n = 0, 1, ...) the write sleeps a random time in
	// [0, min(MaxRetryBackoff, MinRetryBackoff<<n)). Defaults: 2ms and max(100ms, MinRetryBackoff).
	MinRetryBackoff time.Duration
	MaxRetryBackoff time.Duration

	// Now is the clock of bucketed counters (`buckets:` tag option): a write counts into the bucket
	// holding Now(), read once per write (a retried write stays in its bucket), and MaintainBuckets
	// decides from it which buckets are closed or expired. Tests inject a fake clock here.
	// Default: time.Now.
	Now func() time.Time

	// Location is where bucketed counters' days and months begin (local midnight), unless a
	// counter's `tz:` tag option names another zone. Hour buckets are hours of this zone too; they
	// are labelled in UTC. Default: time.UTC.
	Location *time.Location
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$`)

// withDefaults returns the config with defaults applied, or an error wrapping ErrInvalidConfig.
func (c Config) withDefaults() (Config, error) {
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.Table == "" {
		c.Table = DefaultTable
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = 5
	case c.MaxRetries == -1:
		c.MaxRetries = 0
	case c.MaxRetries < -1:
		return c, fmt.Errorf("%w: MaxRetries %d (use -1 to disable retries)", ErrInvalidConfig, c.MaxRetries)
	}
	if c.MinRetryBackoff == 0 {
		c.MinRetryBackoff = 2 * time.Millisecond
	}
	if c.MaxRetryBackoff == 0 {
		c.MaxRetryBackoff = max(100*time.Millisecond, c.MinRetryBackoff)
	}
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
