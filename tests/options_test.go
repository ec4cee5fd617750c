package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// One options style (issue #17): every per-call XOptions is the last argument
// and optional; more than one value is ErrInvalidConfig and writes nothing.

// TestOptionsCounterCacheTwoValues: a declaration with two CacheOptions
// registers nothing, so the counter stays a plain counter.
func TestOptionsCounterCacheTwoValues(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		err := slotted.CounterCache(db, &Topic{}, "Replies", "likes", slotted.CacheOptions{}, slotted.CacheOptions{Sum: "Points"})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
		topic := Topic{Title: "t"}
		require.NoError(t, db.Create(&topic).Error)
		require.NoError(t, db.Create(&Reply{TopicID: &topic.ID, Points: 4}).Error)
		likes, err := slotted.Count(db, &topic, "likes")
		require.NoError(t, err)
		assert.Zero(t, likes, "not a counter cache")
	})
}

// TestOptionsCacheMatchType: Match is typed any, so what the compiler checked
// for the generic Match[T] is checked at declaration: anything but a
// func(*Child) bool is ErrInvalidConfig and registers nothing.
func TestOptionsCacheMatchType(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		for name, match := range map[string]any{
			"another model":       func(*Invoice) bool { return true },
			"a value, not a ptr":  func(Reply) bool { return true },
			"not a bool":          func(*Reply) int { return 1 },
			"two arguments":       func(*Reply, int) bool { return true },
			"not a func":          42,
			"a nil func":          (func(*Reply) bool)(nil),
			"a pointer to a func": ptr(func(*Reply) bool { return true }),
		} {
			err := slotted.CounterCache(db, &Topic{}, "Replies", "likes", slotted.CacheOptions{Where: "published = ?", WhereArgs: []any{true}, Match: match})
			assert.ErrorIs(t, err, slotted.ErrInvalidConfig, name)
		}
		err := slotted.CounterCache(db, &Topic{}, "Replies", "likes", slotted.CacheOptions{WhereArgs: []any{true}})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "WhereArgs without Where")

		topic := Topic{Title: "t"}
		require.NoError(t, db.Create(&topic).Error)
		require.NoError(t, db.Create(&Reply{TopicID: &topic.ID, Published: true}).Error)
		likes, err := slotted.Count(db, &topic, "likes")
		require.NoError(t, err)
		assert.Zero(t, likes, "none of the declarations registered")
	})
}

// TestOptionsOnce: two OnceOptions, both ExpireAfter and KeepForever, or a
// negative ExpireAfter are ErrInvalidConfig with nothing written; without
// options AddOnce keeps the key forever.
func TestOptionsOnce(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "p"}
		require.NoError(t, db.Create(&post).Error)
		ref := slotted.Ref{Type: "downloads", ID: "v1"}
		for name, opts := range map[string][]slotted.OnceOptions{
			"two values":   {{ExpireAfter: time.Hour}, {KeepForever: true}},
			"two zeros":    {{}, {}},
			"both set":     {{ExpireAfter: time.Hour, KeepForever: true}},
			"negative ttl": {{ExpireAfter: -time.Second}},
		} {
			ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 1, "user:7", opts...)
			assert.ErrorIs(t, err, slotted.ErrInvalidConfig, name)
			assert.False(t, ok, name)
			ok, err = slotted.AddRefOnce(db, ref, 1, "req:1", opts...)
			assert.ErrorIs(t, err, slotted.ErrInvalidConfig, name)
			assert.False(t, ok, name)
		}
		assert.Zero(t, counterRows(t, db), "nothing written")
		assert.Empty(t, onceKeys(t, db))

		ok, err := slotted.AddOnce(db, &post, "likes", 1, "user:7")
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = slotted.AddOnce(db, &post, "likes", 1, "user:7", slotted.OnceOptions{KeepForever: true})
		require.NoError(t, err)
		assert.False(t, ok, "the key of the call without options is kept")
		keys := onceKeys(t, db)
		require.Len(t, keys, 1)
		assert.Nil(t, keys[0].ExpiresAt, "no options: kept forever")
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
	})
}

// TestOptionsMaintenanceTwoValues: every call taking an XOptions refuses two
// of them before sending anything.
func TestOptionsMaintenanceTwoValues(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := seedPosts(t, db, 3)
		require.NoError(t, db.Exec("DELETE FROM posts WHERE id = ?", posts[1].ID).Error) // an orphan for Sweep
		before := counterRows(t, db)
		require.NotZero(t, before)

		_, err := slotted.Sweep(db, &Post{}, slotted.SweepOptions{}, slotted.SweepOptions{BatchSize: 1})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "Sweep")
		_, err = slotted.CompactAll(db, slotted.CompactOptions{}, slotted.CompactOptions{})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "CompactAll")
		_, err = slotted.MaintainBuckets(db, &Post{}, slotted.BucketOptions{}, slotted.BucketOptions{})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "MaintainBuckets")
		_, err = slotted.RollUpAll(db, &Article{}, slotted.RollUpOptions{}, slotted.RollUpOptions{})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "RollUpAll")
		_, err = slotted.Fix(db, &posts, slotted.FixOptions{}, slotted.FixOptions{})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "Fix")
		_, err = slotted.FixAll(db, &Post{}, slotted.FixOptions{}, slotted.FixOptions{})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "FixAll")
		_, err = slotted.List(db, &Post{}, "likes", slotted.ListOptions{Limit: 1}, slotted.ListOptions{Limit: 2})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "List")
		_, err = slotted.Trending(db, &Post{}, "likes", slotted.TrendOptions{}, slotted.TrendOptions{})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "Trending")
		buf, err := slotted.NewBuffer(db, slotted.BufferOptions{}, slotted.BufferOptions{})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig, "NewBuffer")
		assert.Nil(t, buf)

		assert.Equal(t, before, counterRows(t, db), "nothing written")
	})
}

// TestOptionsOmitted: the maintenance calls without options run with the
// documented defaults.
func TestOptionsOmitted(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := seedPosts(t, db, 3)
		require.NoError(t, db.Exec("DELETE FROM posts WHERE id = ?", posts[1].ID).Error)
		prog, err := slotted.Sweep(db, &Post{})
		require.NoError(t, err)
		assert.Equal(t, 1, prog.Orphans)
		_, err = slotted.CompactAll(db)
		require.NoError(t, err)
		migratePages(t, db)
		_, err = slotted.MaintainBuckets(db, &Page{})
		require.NoError(t, err)
		_, err = slotted.RollUpAll(db, &Article{})
		require.NoError(t, err)
		buf, err := slotted.NewBuffer(db)
		require.NoError(t, err)
		require.NoError(t, buf.Close(t.Context()))

		// Fix of a counter cache, its drift made behind the callbacks' back.
		cacheDB(t, db)
		ids := newTopics(t, db, 2)
		require.NoError(t, db.Create(&Reply{TopicID: ptr(ids[0])}).Error)
		require.NoError(t, db.Exec("INSERT INTO replies (topic_id, published, points) VALUES (?, ?, ?)", ids[1], false, 0).Error)
		topics := []Topic{{ID: ids[0]}, {ID: ids[1]}}
		drift, err := slotted.Fix(db, &topics)
		require.NoError(t, err)
		require.Len(t, drift, 1)
		assert.Equal(t, "replies", drift[0].Counter)
		assert.EqualValues(t, 0, drift[0].Stored)
		assert.EqualValues(t, 1, drift[0].Actual)
		fix, err := slotted.FixAll(db, &Topic{})
		require.NoError(t, err)
		assert.Zero(t, fix.Drifted)
		requireTopicsExact(t, db, ids[0], ids[1])
	})
}
