package slotted

import (
	"fmt"
	"math"
	"time"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted/internal/meta"

	"github.com/slotted-go/slotted/internal/tables"

	"github.com/slotted-go/slotted/internal/write"
)

// Retry-safe writes. An error such as MySQL's "invalid connection" or a
// context deadline does not say whether the statement committed: after a
// killed connection most of them had, and a write that timed out on a frozen
// server was often applied when it resumed. Add cannot be retried after such
// an error without counting twice. AddOnce records the caller's key in the
// once table (Config.OnceTable) in the same transaction as the increment:
//
//	BEGIN                                      -- BEGIN IMMEDIATE on SQLite
//	INSERT IGNORE INTO `slotted_once` (`record_type`,`record_id`,`op_key`,`delta`,`expires_at`)
//	  VALUES ('posts.likes','42','user:7',1,NULL) RETURNING ...   -- PG/SQLite: ON CONFLICT (...) DO NOTHING RETURNING
//	INSERT INTO `slotted_counters` ... ON DUPLICATE KEY UPDATE ...  -- only if the key came back (was inserted)
//	COMMIT
//
// Concurrent calls share that transaction, their keys in one INSERT
// (once_batch.go).
//
// Either both commit or neither does, so a retry with the same key finds the
// key and adds nothing. The key is per counter (its record_type and
// record_id), so "one like per user" is AddOnce with the user's id as key,
// and RemoveOnce its undo.
//
// INSERT IGNORE rather than ON DUPLICATE KEY UPDATE on MySQL: with the
// driver's clientFoundRows=true a no-op update reports 1 row, which would
// count a duplicate. IGNORE also turns other errors into warnings, but every
// value is checked before it is sent.

// onceRow is one key of AddOnce (the once table's model).
type onceRow = tables.Once

// OnceOptions tunes one AddOnce or AddRefOnce call (their last argument).
// The zero value keeps the key for Config.OnceExpireAfter, forever by default.
type OnceOptions struct {
	// ExpireAfter keeps the key for at least this long by Config.Now's clock (then AddOnce may
	// apply it again, and the Runner's PruneKeys deletes it). For retries of
	// a request, it is how long a client may go on retrying it; "one like
	// per user" keeps keys forever, the default unless
	// Config.OnceExpireAfter says otherwise (then KeepForever). 0: the
	// default; negative is ErrInvalidConfig.
	//
	//	slotted.AddOnce(db, &post, "views", 1, requestID, slotted.OnceOptions{ExpireAfter: 24 * time.Hour})
	ExpireAfter time.Duration

	// KeepForever keeps the key until RemoveOnce deletes it, whatever
	// Config.OnceExpireAfter says: a like, a vote, anything one user may do
	// once for good. Not with ExpireAfter (ErrInvalidConfig).
	//
	//	slotted.AddOnce(db, &post, "likes", 1, "user:7", slotted.OnceOptions{KeepForever: true})
	KeepForever bool
}

// AddOnce adds delta to a counter, like Add, unless key was applied to this
// counter before: it returns whether it applied the write now. Retrying an
// AddOnce whose outcome is unknown (a connection lost or a deadline passed
// while it ran) therefore never counts twice, and AddOnce with a user's id as
// key counts each user once. key is valid UTF-8 without NUL bytes,
// 1..MaxKeyLen bytes. model's field moves only when the write was applied.
//
//	applied, err := slotted.AddOnce(db, &post, "likes", 1, "user:7")
//	// BEGIN
//	// INSERT IGNORE INTO `slotted_once` (`record_type`,`record_id`,`op_key`,`delta`,`expires_at`) VALUES ('posts.likes','42','user:7',1,NULL)
//	//   RETURNING `record_type`,`record_id`,`op_key`
//	// INSERT INTO `slotted_counters` (...) VALUES ('posts.likes','42',17,1) ON DUPLICATE KEY UPDATE ...  -- if the key was new
//	// COMMIT
//
// Keys are kept forever unless OnceOptions.ExpireAfter (or
// Config.OnceExpireAfter) says otherwise; an expired key counts as
// absent. Inside the caller's transaction AddOnce joins it (the key is
// recorded only if that transaction commits) and is not retried; outside one
// concurrent calls share one transaction (once_batch.go), retried as a whole
// on lock conflicts. A key already applied with another delta is not applied
// again. A bucketed counter's key guards its total and the bucket of the call.
func AddOnce(db *gorm.DB, model any, counter string, delta int64, key string, opts ...OnceOptions) (applied bool, err error) {
	p, err := pluginOf(db)
	if err != nil {
		return false, err
	}
	o, err := onceArgs(delta, key, opts) // before writeTarget, whose MustExist check reads
	if err != nil {
		return false, err
	}
	c, v, id, err := p.writeTarget(db, model, counter)
	if err != nil {
		return false, err
	}
	rows := write.RowsOf(make([]write.Row, 0, 2), c, id, delta, p.cfg.Now())
	if applied, err = p.onceDone(p.writes.AddOnceRows(db, Ref{Type: c.RecordType, ID: id}, rows, delta, key, o.expiry(p.cfg))); applied {
		c.Add(v, delta)
	}
	return applied, err
}

// AddRefOnce is AddOnce for a counter named by Ref, spread over Config.Slots slots.
func AddRefOnce(db *gorm.DB, ref Ref, delta int64, key string, opts ...OnceOptions) (applied bool, err error) {
	p, err := pluginOf(db)
	if err != nil {
		return false, err
	}
	if err := ref.Validate(); err != nil {
		return false, err
	}
	o, err := onceArgs(delta, key, opts)
	if err != nil {
		return false, err
	}
	return p.onceDone(p.writes.AddOnceRows(db, ref, []write.Row{{Ref: ref, Slots: p.cfg.Slots, Delta: delta}}, delta, key, o.expiry(p.cfg)))
}

// RemoveOnce undoes AddOnce: if key is recorded (and not expired) for the
// counter, it deletes the key and subtracts the delta AddOnce added, in one
// transaction (shared with concurrent calls, like AddOnce's), and reports
// true; otherwise it writes nothing. A bucketed counter's delta comes off its
// total and the bucket of the RemoveOnce call. "Unlike" is
// RemoveOnce with the user's id; retrying it is safe too, as the key is gone
// after the first success. model's field moves by the subtracted delta.
//
//	removed, err := slotted.RemoveOnce(db, &post, "likes", "user:7")
//	// BEGIN
//	// DELETE FROM `slotted_once` WHERE ((`record_type` = 'posts.likes' AND `record_id` = '42' AND `op_key` = 'user:7'))
//	//   AND (`expires_at` IS NULL OR `expires_at` > '2026-...') RETURNING `record_type`,`record_id`,`op_key`,`delta`
//	// INSERT INTO `slotted_counters` (...) VALUES ('posts.likes','42',5,-1) ON DUPLICATE KEY UPDATE ...
//	// COMMIT
func RemoveOnce(db *gorm.DB, model any, counter string, key string) (removed bool, err error) {
	p, err := pluginOf(db)
	if err != nil {
		return false, err
	}
	c, v, id, err := p.writeTarget(db, model, counter)
	if err != nil {
		return false, err
	}
	if err := checkOnceKey(key); err != nil {
		return false, err
	}
	now := p.cfg.Now()
	delta, removed, err := p.writes.RemoveOnceRows(db, Ref{Type: c.RecordType, ID: id}, func(d int64) []write.Row {
		return write.RowsOf(make([]write.Row, 0, 2), c, id, d, now)
	}, key)
	if removed {
		c.Add(v, -delta)
	}
	return removed, err
}

// RemoveRefOnce is RemoveOnce for a counter named by Ref.
func RemoveRefOnce(db *gorm.DB, ref Ref, key string) (removed bool, err error) {
	p, err := pluginOf(db)
	if err != nil {
		return false, err
	}
	if err := ref.Validate(); err != nil {
		return false, err
	}
	if err := checkOnceKey(key); err != nil {
		return false, err
	}
	_, removed, err = p.writes.RemoveOnceRows(db, ref, func(d int64) []write.Row {
		return []write.Row{{Ref: ref, Slots: p.cfg.Slots, Delta: d}}
	}, key)
	return removed, err
}

func checkOnceKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: the once key is empty", ErrUnsupportedKey)
	}
	return meta.CheckKey("the once key", key)
}

// onceArgs checks AddOnce's arguments. MinInt64 is refused because
// RemoveOnce could not subtract it.
func onceArgs(delta int64, key string, opts []OnceOptions) (OnceOptions, error) {
	o, err := optionsOf(opts)
	switch {
	case err != nil:
		return o, err
	case o.ExpireAfter < 0:
		return o, fmt.Errorf("%w: OnceOptions.ExpireAfter %v is negative", ErrInvalidConfig, o.ExpireAfter)
	case o.ExpireAfter > 0 && o.KeepForever:
		return o, fmt.Errorf("%w: OnceOptions with both ExpireAfter and KeepForever", ErrInvalidConfig)
	case delta == math.MinInt64:
		return o, fmt.Errorf("%w: AddOnce's delta %d could not be undone", ErrOverflow, delta)
	}
	return o, checkOnceKey(key)
}

// migrateOnce creates or migrates the once table, tolerant of concurrent
// instances like the counter table (see migrate).
func (p *Plugin) migrateOnce(db *gorm.DB) error {
	return p.migrateTable(db, p.cfg.OnceTable, &onceRow{})
}
