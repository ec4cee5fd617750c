// Package slotted is a GORM plugin for slotted counters: hot counters (likes,
// views, downloads) spread over up to N rows so concurrent writers stop
// queueing on one row lock.
//
// A counter kept as
//
//	UPDATE posts SET likes = likes + 1 WHERE id = ?
//
// makes every writer of a popular post wait for the one before it. A slotted
// counter writes to one of N "slot" rows chosen at random,
//
//	INSERT INTO slotted_counters (record_type, record_id, slot, count) VALUES (?, ?, <0..N-1>, 1)
//	ON DUPLICATE KEY UPDATE count = count + 1   -- ON CONFLICT ... DO UPDATE on PostgreSQL/SQLite
//
// and reads the total as the sum of its rows:
//
//	SELECT SUM(count) FROM slotted_counters WHERE record_type = ? AND record_id = ?
//
// # Use
//
// Register the plugin, tag integer fields as counters, and call the helpers:
//
//	type Post struct {
//		ID    uint
//		Title string
//		Likes int64 `gorm:"-" slotted:"likes"`
//	}
//
//	db.Use(slotted.New(slotted.Config{}))    // creates the slotted_counters table
//	slotted.Increment(db, &post, "likes")    // one upsert; post.Likes moves too
//	n, _ := slotted.Count(db, &post, "likes") // SUM of the slot rows
//	db.Find(&posts)                           // Likes filled with one extra query for all posts
//
// A counter's identity is its record_type, "<table>.<counter>" by default
// ("posts.likes"), and its record_id, the primary key as text ("42"). Ref and
// AddRef/CountRef name counters directly, without a model.
//
// Options follow gorm's own style: Config configures the plugin once; what one
// call can be told is a struct named after it (CacheOptions, OnceOptions,
// FixOptions, ListOptions, ...) passed as the call's last argument, which may
// be left out (its zero value is the documented default) and is given at
// most once:
//
//	slotted.Sweep(db, &Post{})
//	slotted.Fix(db, &posts, slotted.FixOptions{DryRun: true})
//
// # Coalescing, bulk writes, write-behind
//
// Outside a transaction, writes that arrive while the plugin's statements for
// the same connection pool are in flight (Config.MaxInFlight of them) are
// coalesced: summed per counter and written by the next statement, one
// multi-row upsert. Each caller still returns only after its own delta has
// committed, with that statement's error (Config.DisableCoalescing turns it
// off). AddEach, AddMany and AddRefs write many counters with one statement;
// AddWhere adds to every record a query selects with one INSERT … SELECT. A
// Buffer (NewBuffer) is write-behind: Add returns at once and deltas are
// flushed in the background, at the price of losing the unflushed ones in a
// crash.
//
// # Buckets, rankings
//
// A counter tagged `slotted:"views;buckets:day"` (hour, day, week or month) also
// counts each write into the current bucket, in the same statement as its
// all-time total; CountBetween, Series and LoadBetween read windows of
// buckets, MaintainBuckets compacts closed buckets and deletes expired ones
// (keep:N). Top, TopBetween, TopRefs and the OrderBy, OrderByBetween and
// WhereCounter scopes rank and filter a model's records by a counter inside
// an ordinary gorm query.
//
// # Lifecycle
//
// Compact and CompactAll fold slot rows back into one row per counter, Reset
// sets a counter from a recount, RollUp and RollUpAll copy totals into a cache
// column of the parent table, Runner does the periodic part in the
// background, and Sweep removes counters whose records are gone (hard deletes
// through gorm remove them already). All of them stay exact while writers keep
// incrementing. The diagnose subpackage reports lock waits and the hottest
// counters.
//
// # Retry-safe writes
//
// An error such as "invalid connection" or a passed deadline does not say
// whether the write committed, so retrying Increment after one may count
// twice. AddOnce (and AddRefOnce) records a key of the caller's choosing (a
// request id, a user id) in the same transaction as the increment, and
// applies each key once per counter: a retry with the same key adds nothing,
// and "one like per user" needs no table of its own. RemoveOnce undoes it.
// Keys are kept forever, or for OnceOptions.ExpireAfter, after which a
// Runner with PruneKeys deletes them.
//
// On MariaDB/MySQL and PostgreSQL (unless Config.DisableOutcomeMarkers), a
// coalesced write that fails on a lost connection is looked up before it returns (a marker row in the same
// statement): nil if it committed, its error if not, so only a context's
// error (or ErrOutcomeUnknown) leaves a write's outcome open. Buffers are
// exactly once the same way. docs/outcomes.md tables every call's outcomes.
//
// # Counter caches
//
// CounterCache keeps a parent's counter equal to the number of its children
// (or a column's sum, or the count of those matching a condition), from one of
// gorm's relationships:
//
//	slotted.CounterCache(db, &Post{}, "Comments", "comments")
//	db.Create(&comment) // INSERT ...; one upsert per post, in the same transaction
//
// Creates, deletes (soft and hard), restores and moves of children are
// counted in the same transaction as the change; the rows an update or delete
// touches are read FOR UPDATE first. Fix and FixAll recompute counters from
// the children, exactly, while writers keep going; a dry run reports the drift.
// A counter field set on a new record seeds its counter.
//
// # Guarantees
//
// Every write is one statement (a coalesced one carries other callers' deltas
// too; a bulk write of more than 1024 counters is several in one transaction;
// AddOnce and RemoveOnce are one transaction). Inside the caller's transaction
// it joins the transaction; outside one it runs in autocommit, with no BEGIN/COMMIT, and is
// retried on deadlocks, lock wait timeouts, serialization failures and
// SQLITE_BUSY. Bad input returns an error wrapping one of the Err* sentinels
// and writes nothing; so does a write that would take a slot past int64
// (ErrOverflow). All SQL goes through gorm's callbacks, so loggers, tracing,
// dbresolver and TranslateError see it; user values are always bound
// parameters. Under dbresolver every read that decides a write or a delete
// runs on the primary, and auto-fill reads the replica its records came from.
//
// On a MariaDB Galera cluster (detected at db.Use) Compact, Reset and RollUp
// first wait for their node to apply every write acknowledged anywhere in the
// cluster, so Reset's guarantee holds across nodes; Config.CausalReads does
// the same for reads, and the retry defaults allow for certification
// conflicts (see docs/deployments.md).
//
// # Guides
//
// The README is the overview; docs/ has a guide per thing users build
// (docs/likes.md, docs/views-per-day.md, docs/counter-caches.md,
// docs/listings.md) and per concern (docs/reads-and-writes.md,
// docs/write-modes.md, docs/outcomes.md, docs/maintenance.md,
// docs/deployments.md, docs/production.md, docs/tuning.md), with the schema,
// every Config field and every error in docs/reference.md.
package slotted
