package tests

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// Counter-cache models. A topic counts its replies four ways; a customer
// (string key, belongs-to declaration) counts and sums its invoices.
type Topic struct {
	ID        uint
	Title     string
	Replies   []Reply
	Count     int64 `gorm:"-" slotted:"replies"`   // every live reply
	Published int64 `gorm:"-" slotted:"published"` // Where + Match
	Popular   int64 `gorm:"-" slotted:"popular"`   // Where only: read back after a Create
	Points    int64 `gorm:"-" slotted:"points"`    // Sum of Reply.Points
	Likes     int64 `gorm:"-" slotted:"likes"`     // a plain counter: seeded on Create
	Weighted  int64 `gorm:"-" slotted:"weighted"`  // published replies, 3 each (Weight)
	Ever      int64 `gorm:"-" slotted:"ever"`      // replies soft-deleted or not (WithDeleted), 2 points each (Sum + Weight)
}

type Reply struct {
	ID        uint
	TopicID   *uint `gorm:"index"`
	Topic     *Topic
	Published bool
	Points    int64
	Body      string
	DeletedAt gorm.DeletedAt `gorm:"index"`
}

type Customer struct {
	ID       string `gorm:"primaryKey;size:36"`
	Name     string
	Invoices int64  `gorm:"-" slotted:"invoices"`
	Spent    uint32 `gorm:"-" slotted:"spent"` // unsigned: a negative total reads as 0
}

type Invoice struct {
	ID         uint
	CustomerID string `gorm:"size:36;index"`
	Customer   *Customer
	Total      int64
	Memo       string // no cache reads it: updating it alone reads nothing
}

// cacheModels in drop order (children first: the foreign keys point at the parents).
var cacheModels = []any{&Reply{}, &Topic{}, &Invoice{}, &Customer{}}

// popularPoints is the Where-only condition's threshold.
const popularPoints = 10

// cacheDB migrates the counter-cache models on a harness database and declares their caches.
func cacheDB(t testing.TB, db *gorm.DB) *gorm.DB {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(cacheModels...))
	require.NoError(t, db.AutoMigrate(&Topic{}, &Reply{}, &Customer{}, &Invoice{}))
	declareCaches(t, db)
	return db
}

func declareCaches(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, slotted.CounterCache(db, &Topic{}, "Replies", "replies"))
	require.NoError(t, slotted.CounterCache(db, &Topic{}, "Replies", "published",
		slotted.CacheOptions{Where: "published = ?", WhereArgs: []any{true}, Match: func(r *Reply) bool { return r.Published }}))
	require.NoError(t, slotted.CounterCache(db, &Topic{}, "Replies", "popular", slotted.CacheOptions{Where: "points >= ?", WhereArgs: []any{popularPoints}}))
	require.NoError(t, slotted.CounterCache(db, &Topic{}, "Replies", "points", slotted.CacheOptions{Sum: "Points"}))
	require.NoError(t, slotted.CounterCache(db, &Invoice{}, "Customer", "invoices"))
	require.NoError(t, slotted.CounterCache(db, &Invoice{}, "Customer", "Spent", slotted.CacheOptions{Sum: "total"}))
}

// topicTruth is what a topic's counters must hold: computed from the replies table.
type topicTruth struct{ Replies, Published, Popular, Points int64 }

func truthOf(t testing.TB, db *gorm.DB, topicID uint) topicTruth {
	t.Helper()
	var tr topicTruth
	q := func() *gorm.DB { return db.Model(&Reply{}).Where("topic_id = ?", topicID) }
	require.NoError(t, q().Count(&tr.Replies).Error)
	require.NoError(t, q().Where("published = ?", true).Count(&tr.Published).Error)
	require.NoError(t, q().Where("points >= ?", popularPoints).Count(&tr.Popular).Error)
	require.NoError(t, q().Select("COALESCE(SUM(points), 0)").Scan(&tr.Points).Error)
	return tr
}

func countersOf(t testing.TB, db *gorm.DB, topicID uint) topicTruth {
	t.Helper()
	var got topicTruth
	for _, c := range []struct {
		name string
		into *int64
	}{{"replies", &got.Replies}, {"published", &got.Published}, {"popular", &got.Popular}, {"points", &got.Points}} {
		n, err := slotted.Count(db, &Topic{ID: topicID}, c.name)
		require.NoError(t, err)
		*c.into = n
	}
	return got
}

// requireTopicsExact checks every counter of the topics against the replies table.
func requireTopicsExact(t testing.TB, db *gorm.DB, topicIDs ...uint) {
	t.Helper()
	for _, id := range topicIDs {
		require.Equal(t, truthOf(t, db, id), countersOf(t, db, id), "topic %d: counters vs replies table", id)
		if _, ok := extraCaches.Load(db.Config); ok {
			require.Equal(t, extraTruthOf(t, db, id), extraCountersOf(t, db, id), "topic %d: Weight/WithDeleted counters vs replies table", id)
		}
	}
}

// extraCaches holds the *gorm.Config of the databases declareExtraCaches ran on.
var extraCaches sync.Map

// declareExtraCaches adds the Weight and WithDeleted caches of Topic
// (requireTopicsExact then checks them too). The statement-count tests run
// without them: a WithDeleted cache makes a soft delete read its rows again.
func declareExtraCaches(t testing.TB, db *gorm.DB) {
	t.Helper()
	require.NoError(t, slotted.CounterCache(db, &Topic{}, "Replies", "weighted", slotted.CacheOptions{Weight: 3, Where: "published = ?", WhereArgs: []any{true}, Match: func(r *Reply) bool { return r.Published }}))
	require.NoError(t, slotted.CounterCache(db, &Topic{}, "Replies", "ever", slotted.CacheOptions{WithDeleted: true, Sum: "Points", Weight: 2}))
	extraCaches.Store(db.Config, true)
}

// extraTruth is what the Weight and WithDeleted counters must hold.
type extraTruth struct{ Weighted, Ever int64 }

func extraTruthOf(t testing.TB, db *gorm.DB, topicID uint) extraTruth {
	t.Helper()
	var tr extraTruth
	require.NoError(t, db.Model(&Reply{}).Where("topic_id = ? AND published = ?", topicID, true).Count(&tr.Weighted).Error)
	tr.Weighted *= 3
	require.NoError(t, db.Unscoped().Model(&Reply{}).Where("topic_id = ?", topicID).Select("COALESCE(SUM(points), 0)").Scan(&tr.Ever).Error)
	tr.Ever *= 2
	return tr
}

func extraCountersOf(t testing.TB, db *gorm.DB, topicID uint) extraTruth {
	t.Helper()
	var got extraTruth
	var err error
	got.Weighted, err = slotted.Count(db, &Topic{ID: topicID}, "weighted")
	require.NoError(t, err)
	got.Ever, err = slotted.Count(db, &Topic{ID: topicID}, "ever")
	require.NoError(t, err)
	return got
}
