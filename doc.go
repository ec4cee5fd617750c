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
// # Buckets, rankings
//
// A counter tagged `slotted:"views;buckets:day"` (hour, day or month) also
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
// incrementing. Diagnose reports lock waits and the hottest counters.
//
// # Guarantees
//
// Every write is one statement. Inside the caller's transaction it joins the
// transaction; outside one it runs in autocommit, with no BEGIN/COMMIT, and is
// retried on deadlocks, lock wait timeouts, serialization failures and
// SQLITE_BUSY. Bad input returns an error wrapping one of the Err* sentinels
// and writes nothing. All SQL goes through gorm's callbacks, so loggers,
// tracing, dbresolver and TranslateError see it; user values are always bound
// parameters.
package slotted
