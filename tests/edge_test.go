package tests

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/slotted-go/slotted"
)

type Base struct {
	ID uint `gorm:"primaryKey"`
}

type Stats struct {
	Hits int64 `gorm:"-" slotted:"hits"`
}

// Embedded reaches its key and a counter through embedded pointers.
type Embedded struct {
	*Base
	*Stats
	Name string
}

func TestEmbeddedPointerStructs(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&Embedded{}))
		require.NoError(t, db.AutoMigrate(&Embedded{}))
		e := Embedded{Base: &Base{}, Stats: &Stats{}, Name: "e"}
		require.NoError(t, db.Create(&e).Error)
		require.NoError(t, slotted.Add(db, &e, "hits", 4))
		assert.EqualValues(t, 4, e.Hits)

		var got []Embedded
		require.NoError(t, db.Find(&got).Error)
		require.Len(t, got, 1)
		assert.EqualValues(t, 4, got[0].Hits)

		noStats := Embedded{Base: &Base{ID: e.ID}}
		require.NoError(t, slotted.Add(db, &noStats, "hits", 1))
		assert.EqualValues(t, 1, noStats.Hits, "a nil embedded counter struct is allocated, as gorm's scanner does")
		var noKey Embedded
		require.ErrorIs(t, slotted.Increment(db, &noKey, "hits"), slotted.ErrMissingPrimaryKey, "a nil embedded key struct is a missing key")
		require.NoError(t, db.Migrator().DropTable(&Embedded{}))
	})
}

type BrokenTag struct {
	ID    uint
	Title string
	N     int `slotted:"n;colour:red"` // no gorm:"-": a column, and a bad tag
}

func TestBadTagDoesNotBreakOtherQueries(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Migrator().DropTable(&BrokenTag{}))
		require.NoError(t, db.AutoMigrate(&BrokenTag{}))
		require.NoError(t, db.Create(&BrokenTag{Title: "x", N: 5}).Error)
		var n int64
		require.NoError(t, db.Model(&BrokenTag{}).Count(&n).Error)
		assert.EqualValues(t, 1, n)
		var titles []string
		require.NoError(t, db.Model(&BrokenTag{}).Pluck("title", &titles).Error)
		assert.Equal(t, []string{"x"}, titles)
		var col sql.NullInt64
		require.NoError(t, db.Table("broken_tags").Select("n").Row().Scan(&col))
		assert.False(t, col.Valid, "the counter column is still kept out of the INSERT")
		var rows []BrokenTag
		require.ErrorIs(t, db.Find(&rows).Error, slotted.ErrInvalidConfig, "loading the model itself reports the tag")
		require.NoError(t, db.Migrator().DropTable(&BrokenTag{}))
	})
}

func TestPluginServesOneDB(t *testing.T) {
	p := slotted.New(slotted.Config{})
	require.NoError(t, openRaw(t, dbSQLite).Use(p))
	other, err := gorm.Open(sqliteOpen(sqliteDSN(filepath.Join(t.TempDir(), "other.db"), 5000, false)), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.ErrorIs(t, other.Use(p), slotted.ErrInvalidConfig)
}

func TestUserPreparedStatements(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		prepared := db.Session(&gorm.Session{PrepareStmt: true})
		post := Post{Title: "prepared"}
		require.NoError(t, prepared.Create(&post).Error)
		for i := 0; i < 3; i++ {
			require.NoError(t, slotted.Increment(prepared, &post, "likes"))
		}
		n, err := slotted.Count(prepared, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 3, n)
		var got Post
		require.NoError(t, prepared.First(&got, post.ID).Error)
		assert.EqualValues(t, 3, got.Likes)
	})
}

// beginCounter is a connection pool that counts the transactions begun on it.
type beginCounter struct {
	gorm.ConnPool
	begins atomic.Int64
}

func (b *beginCounter) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	b.begins.Add(1)
	return b.ConnPool.(gorm.TxBeginner).BeginTx(ctx, opts)
}

func TestAutocommitHasNoBeginCommit(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		counter := &beginCounter{ConnPool: db.Statement.ConnPool}
		tx := db.Session(&gorm.Session{Initialized: true})
		tx.Statement.ConnPool = counter
		post := Post{Title: "autocommit"}
		require.NoError(t, tx.Session(&gorm.Session{}).Create(&post).Error)
		require.EqualValues(t, 1, counter.begins.Load(), "the probe sees gorm's default transaction around Create")

		rtx, rec := recorded(tx)
		for i := 0; i < 5; i++ {
			require.NoError(t, slotted.Increment(rtx.Session(&gorm.Session{}), &post, "likes"))
		}
		assert.EqualValues(t, 1, counter.begins.Load(), "increments open no transaction")
		assert.Equal(t, 5, rec.count("INSERT INTO"), "one statement each")
	})
}

func TestCancelDuringRetryBackoff(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		tag, release := lockedTag(t, db, "cancel")
		defer release()
		timeout := 300 * time.Millisecond
		if dialect(db) == dbMySQL {
			timeout = 1500 * time.Millisecond // one InnoDB lock wait is 1s
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		err := slotted.Increment(db.WithContext(ctx), &tag, "uses")
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), timeout+1200*time.Millisecond, "gave up when the context ended")
	}, slotted.Config{MaxRetries: 1000, MinRetryBackoff: 50 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond})
}

// TestDBResolver routes the plugin's statements the way dbresolver routes the
// user's: writes to the source, reads to replicas unless dbresolver.Write is
// given. It runs on SQLite only: routing is decided in the client, and two
// SQLite files make the source and the replica tellable apart.
func TestDBResolver(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqliteOpen(sqliteDSN(filepath.Join(dir, name), 5000, false))
	}
	db, err := gorm.Open(open("source.db"), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	replica, err := gorm.Open(open("replica.db"), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, replica.Use(slotted.New(slotted.Config{}))) // the replica has the table, empty
	require.NoError(t, replica.AutoMigrate(&Post{}))
	require.NoError(t, db.Use(slotted.New(slotted.Config{})))
	require.NoError(t, db.AutoMigrate(&Post{}))
	require.NoError(t, db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{open("replica.db")}})))

	post := Post{ID: 1, Title: "routed"}
	require.NoError(t, db.Create(&post).Error)
	require.NoError(t, replica.Create(&post).Error)
	require.NoError(t, slotted.Add(db, &post, "likes", 5))
	n, err := slotted.CountRef(replica, slotted.Ref{Type: "posts.likes", ID: "1"})
	require.NoError(t, err)
	assert.Zero(t, n, "the write went to the source")

	n, err = slotted.Count(db, &post, "likes")
	require.NoError(t, err)
	assert.Zero(t, n, "a plain read goes to the replica")
	n, err = slotted.Count(db.Clauses(dbresolver.Write), &post, "likes")
	require.NoError(t, err)
	assert.EqualValues(t, 5, n, "dbresolver.Write reads the source")

	var got Post
	require.NoError(t, db.Clauses(dbresolver.Write).First(&got, 1).Error)
	assert.EqualValues(t, 5, got.Likes, "auto-fill follows the query's routing")
	require.NoError(t, slotted.Add(db.Clauses(dbresolver.Write), &post, "likes", 1))
	n, err = slotted.Count(db.Clauses(dbresolver.Write), &post, "likes")
	require.NoError(t, err)
	assert.EqualValues(t, 6, n)
}
