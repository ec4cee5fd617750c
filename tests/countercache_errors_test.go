package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// Group has a many2many: a condition on it is refused (countercache_many2many_test.go has the rest).
type Group struct {
	ID      uint
	Members []Member `gorm:"many2many:group_members"`
	Count   int64    `gorm:"-" slotted:"members"`
}

type Member struct {
	ID uint
}

// Forum's only counter is bucketed: a counter cache cannot keep it.
type Forum struct {
	ID      uint
	Threads []Thread
	Daily   int64 `gorm:"-" slotted:"threads_daily;buckets:day"`
}

type Thread struct {
	ID      uint
	ForumID uint
}

func TestCounterCacheDeclarationErrors(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		cases := []struct {
			name  string
			err   error
			model any
			assoc string
			ctr   string
			opts  []slotted.CacheOptions
		}{
			{"unknown association", slotted.ErrInvalidConfig, &Topic{}, "Comments", "replies", nil},
			{"unknown counter", slotted.ErrUnknownCounter, &Topic{}, "Replies", "nope", nil},
			{"already declared", slotted.ErrInvalidConfig, &Topic{}, "Replies", "replies", nil},
			{"already declared, other options", slotted.ErrInvalidConfig, &Topic{}, "Replies", "replies", []slotted.CacheOptions{{Weight: 2}}},
			{"already declared, from the belongs-to", slotted.ErrInvalidConfig, &Reply{}, "Topic", "replies", nil},
			{"many2many with a condition", slotted.ErrInvalidConfig, &Group{}, "Members", "members", []slotted.CacheOptions{{Where: "1 = 1"}}},
			{"bucketed counter", slotted.ErrInvalidConfig, &Forum{}, "Threads", "threads_daily", nil},
			{"not a struct", slotted.ErrUnsupportedModel, 42, "Replies", "likes", nil},
			{"sum of a text column", slotted.ErrInvalidConfig, &Topic{}, "Replies", "likes", []slotted.CacheOptions{{Sum: "Body"}}},
			{"sum of no column", slotted.ErrInvalidConfig, &Topic{}, "Replies", "likes", []slotted.CacheOptions{{Sum: "Nope"}}},
			{"Match without Where", slotted.ErrInvalidConfig, &Topic{}, "Replies", "likes", []slotted.CacheOptions{{Match: func(*Reply) bool { return true }}}},
			{"Match of another type", slotted.ErrInvalidConfig, &Topic{}, "Replies", "likes", []slotted.CacheOptions{{Where: "1 = 1", Match: func(*Invoice) bool { return true }}}},
		}
		for _, c := range cases {
			err := slotted.CounterCache(db, c.model, c.assoc, c.ctr, c.opts...)
			assert.ErrorIs(t, err, c.err, c.name)
		}
		// None of the failed declarations registered anything: likes stays a plain counter.
		topic := Topic{Title: "t"}
		require.NoError(t, db.Create(&topic).Error)
		require.NoError(t, db.Create(&Reply{TopicID: &topic.ID}).Error)
		likes, err := slotted.Count(db, &topic, "likes")
		require.NoError(t, err)
		assert.Zero(t, likes)
		replies, err := slotted.Count(db, &topic, "replies")
		require.NoError(t, err)
		assert.Equal(t, int64(1), replies, "the first declaration, once: the duplicates changed nothing")

		plain, err := gorm.Open(db.Dialector, &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		assert.ErrorIs(t, slotted.CounterCache(plain, &Topic{}, "Replies", "replies"), slotted.ErrNotRegistered)
		_, err = slotted.Fix(plain, &topic)
		assert.ErrorIs(t, err, slotted.ErrNotRegistered)
	})
}

func TestCounterCacheBadInput(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		// A new parent cannot bring its own count: its children are the source.
		err := db.Create(&Topic{Title: "preset", Count: 3}).Error
		require.ErrorIs(t, err, slotted.ErrCounterCache)
		err = db.Create(&[]Topic{{Title: "ok"}, {Title: "preset", Points: 1}}).Error
		require.ErrorIs(t, err, slotted.ErrCounterCache)
		var n int64
		require.NoError(t, db.Model(&Topic{}).Count(&n).Error)
		assert.Zero(t, n, "nothing written")

		// A Create from a map where a condition has no Match would have to be
		// read back by a key the map may not hold: refused, nothing written.
		topic := Topic{Title: "t"}
		require.NoError(t, db.Create(&topic).Error)
		err = db.Model(&Reply{}).Create(map[string]any{"topic_id": topic.ID, "points": 3}).Error
		require.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		// So is a map value that gorm cannot store in a counted column.
		c := Customer{ID: "c"}
		require.NoError(t, db.Create(&c).Error)
		err = db.Model(&Invoice{}).Create(map[string]any{"customer_id": "c", "total": gorm.Expr("1 + 1")}).Error
		require.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		require.NoError(t, db.Model(&Reply{}).Count(&n).Error)
		assert.Zero(t, n)
		require.NoError(t, db.Model(&Invoice{}).Count(&n).Error)
		assert.Zero(t, n)

		// Fix of a model or counter without a cache, a bad batch size.
		_, err = slotted.Fix(db, &Post{ID: 1})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig)
		_, err = slotted.Fix(db, &topic, slotted.FixOptions{Counters: []string{"likes"}})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig)
		_, err = slotted.Fix(db, &topic, slotted.FixOptions{Counters: []string{"nope"}})
		assert.ErrorIs(t, err, slotted.ErrUnknownCounter)
		_, err = slotted.FixAll(db, &Topic{}, slotted.FixOptions{BatchSize: -1})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig)
		_, err = slotted.Fix(db, &Topic{})
		assert.ErrorIs(t, err, slotted.ErrMissingPrimaryKey)
		_, err = slotted.FixAll(db, "topics")
		assert.ErrorIs(t, err, slotted.ErrUnsupportedModel)
	})
}
