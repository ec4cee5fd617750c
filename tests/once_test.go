package tests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// onceRow mirrors the once table, to read and seed it directly.
type onceRow struct {
	RecordType string
	RecordID   string
	OpKey      string
	Delta      int64
	ExpiresAt  *time.Time
}

// freshOnce empties the once table (the harness drops only the counter
// table) and bounds the pool: the servers are shared, and 48 goroutines
// queueing for 16 connections still race on every key.
func freshOnce(t *testing.T, db *gorm.DB) {
	t.Helper()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(16)
	require.NoError(t, db.Migrator().DropTable(slotted.DefaultOnceTable))
	require.NoError(t, slotted.Migrate(db))
}

func onceKeys(t *testing.T, db *gorm.DB) []onceRow {
	t.Helper()
	var rows []onceRow
	require.NoError(t, db.Table(slotted.DefaultOnceTable).Order("record_type, record_id, op_key").Find(&rows).Error)
	return rows
}

func countOf(t *testing.T, db *gorm.DB, post *Post) int64 {
	t.Helper()
	n, err := slotted.Count(db, post, "likes")
	require.NoError(t, err)
	return n
}

func TestAddOnceRacingWriters(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "once"}
		require.NoError(t, db.Create(&post).Error)
		const writers = 48

		// Every writer tries the same 8 keys, in different orders: each key is applied exactly once.
		var applied atomic.Int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 8 {
					key := fmt.Sprintf("user:%d", (i+w)%8)
					ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 1, key)
					if !assert.NoError(t, err) {
						return
					}
					if ok {
						applied.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		assert.EqualValues(t, 8, applied.Load(), "each key applied once")
		assert.EqualValues(t, 8, countOf(t, db, &post))
		assert.Len(t, onceKeys(t, db), 8)

		// Distinct keys: all applied.
		applied.Store(0)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 2, fmt.Sprintf("req:%d:%d", w, i))
					if assert.NoError(t, err) && assert.True(t, ok) {
						applied.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		assert.EqualValues(t, writers*5, applied.Load())
		assert.EqualValues(t, 8+writers*5*2, countOf(t, db, &post))
		assert.Len(t, onceKeys(t, db), 8+writers*5)
	})
}

func TestAddOnceRetry(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "retry"}
		require.NoError(t, db.Create(&post).Error)

		p := Post{ID: post.ID}
		ok, err := slotted.AddOnce(db, &p, "likes", 3, "req-1")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.EqualValues(t, 3, p.Likes, "the model moves when applied")
		ok, err = slotted.AddOnce(db, &p, "Likes", 3, "req-1") // the same write, retried
		require.NoError(t, err)
		assert.False(t, ok)
		assert.EqualValues(t, 3, p.Likes, "and stays when not")
		ok, err = slotted.AddOnce(db, &p, "likes", 7, "req-1") // another delta under a used key
		require.NoError(t, err)
		assert.False(t, ok)
		assert.EqualValues(t, 3, countOf(t, db, &post))

		// The key is per counter: the same key applies to another post and another counter.
		other := Post{Title: "other"}
		require.NoError(t, db.Create(&other).Error)
		ok, err = slotted.AddOnce(db, &other, "likes", 1, "req-1")
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = slotted.AddOnce(db, &p, "views", 1, "req-1")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.EqualValues(t, 3, countOf(t, db, &post))
		assert.Equal(t, []onceRow{
			{RecordType: "posts.likes", RecordID: itoa(post.ID), OpKey: "req-1", Delta: 3},
			{RecordType: "posts.likes", RecordID: itoa(other.ID), OpKey: "req-1", Delta: 1},
			{RecordType: "posts.views", RecordID: itoa(post.ID), OpKey: "req-1", Delta: 1},
		}, onceKeys(t, db))
	})
}

// errLostReply is what a client sees when its connection dies after the
// server committed: the outcome is unknown to it.
var errLostReply = errors.New("invalid connection")

// lyingPool commits for real and then, once armed, reports the commit as
// failed: the ambiguous error of a connection killed right after COMMIT.
// MySQL and PostgreSQL transactions commit through it; SQLite's BEGIN
// IMMEDIATE transaction commits with an Exec("COMMIT") through gorm's Raw
// callbacks, where a callback after gorm:raw does the same.
type lyingPool struct {
	*sql.DB
	armed *atomic.Bool
}

func (p *lyingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &lyingTx{tx, p.armed}, nil
}

func (p *lyingPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

type lyingTx struct {
	*sql.Tx
	armed *atomic.Bool
}

func (t *lyingTx) Commit() error {
	if err := t.Tx.Commit(); err != nil {
		return err
	}
	if t.armed.CompareAndSwap(true, false) {
		return errLostReply
	}
	return nil
}

// lying returns a session of db whose next commit succeeds and reports an error.
func lying(t *testing.T, db *gorm.DB) (*gorm.DB, *atomic.Bool) {
	t.Helper()
	armed := &atomic.Bool{}
	sqlDB, err := db.DB()
	require.NoError(t, err)
	require.NoError(t, db.Callback().Raw().After("gorm:raw").Register("test:lie_after_commit", func(tx *gorm.DB) {
		if tx.Error == nil && tx.Statement.SQL.String() == "COMMIT" && armed.CompareAndSwap(true, false) {
			_ = tx.AddError(errLostReply)
		}
	}))
	s := db.Session(&gorm.Session{})
	s.Statement.ConnPool = &lyingPool{sqlDB, armed}
	return s, armed
}

func TestAddOnceAfterAmbiguousCommit(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "ambiguous"}
		require.NoError(t, db.Create(&post).Error)
		ldb, armed := lying(t, db)

		armed.Store(true)
		ok, err := slotted.AddOnce(ldb, &Post{ID: post.ID}, "likes", 1, "req-9")
		if markerRows(db) == 1 { // the batch's outcome marker was read: it committed (docs/outcomes.md)
			require.NoError(t, err, "the caller is told the write applied")
			assert.True(t, ok)
		} else {
			require.ErrorIs(t, err, errLostReply, "the caller is told the write failed")
			assert.False(t, ok)
		}
		assert.False(t, armed.Load(), "the commit went through the lying pool")
		assert.EqualValues(t, 1, countOf(t, db, &post), "but it committed")

		// The caller retries, as it must: nothing is counted twice.
		for range 3 {
			ok, err = slotted.AddOnce(ldb, &Post{ID: post.ID}, "likes", 1, "req-9")
			require.NoError(t, err)
			assert.False(t, ok)
		}
		assert.EqualValues(t, 1, countOf(t, db, &post))

		// The same ambiguity on an undo: the retry finds the key gone and subtracts nothing.
		armed.Store(true)
		removed, err := slotted.RemoveOnce(ldb, &Post{ID: post.ID}, "likes", "req-9")
		if markerRows(db) == 1 {
			require.NoError(t, err)
			assert.True(t, removed)
		} else {
			require.ErrorIs(t, err, errLostReply)
		}
		removed, err = slotted.RemoveOnce(ldb, &Post{ID: post.ID}, "likes", "req-9")
		require.NoError(t, err)
		assert.False(t, removed)
		assert.Zero(t, countOf(t, db, &post))
		assert.Empty(t, onceKeys(t, db))
	})
}

func TestAddOnceInCallerTransaction(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "tx"}
		require.NoError(t, db.Create(&post).Error)

		rdb, rec := recorded(db)
		err := rdb.Transaction(func(tx *gorm.DB) error {
			ok, err := slotted.AddOnce(tx, &Post{ID: post.ID}, "likes", 1, "user:1")
			require.NoError(t, err)
			assert.True(t, ok)
			ok, err = slotted.AddOnce(tx, &Post{ID: post.ID}, "likes", 1, "user:1")
			require.NoError(t, err)
			assert.False(t, ok, "the transaction sees its own key")
			assert.EqualValues(t, 1, countOf(t, tx, &post))
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		assert.Zero(t, countOf(t, db, &post), "rolled back with the caller")
		assert.Empty(t, onceKeys(t, db), "and so was the key")
		assert.Zero(t, rec.count("BEGIN IMMEDIATE"), "no transaction of its own")

		err = db.Transaction(func(tx *gorm.DB) error {
			ok, err := slotted.AddOnce(tx, &Post{ID: post.ID}, "likes", 1, "user:1")
			require.NoError(t, err)
			assert.True(t, ok, "the rolled-back key is free again")
			return nil
		})
		require.NoError(t, err)
		assert.EqualValues(t, 1, countOf(t, db, &post))
		assert.Len(t, onceKeys(t, db), 1)
	})
}

func TestRemoveOnce(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "likes"}
		require.NoError(t, db.Create(&post).Error)
		p := Post{ID: post.ID}

		removed, err := slotted.RemoveOnce(db, &p, "likes", "user:1")
		require.NoError(t, err)
		assert.False(t, removed, "nothing to undo")

		// like, unlike, like again; the undo subtracts the delta that was added.
		for _, user := range []string{"user:1", "user:2", "user:3"} {
			ok, err := slotted.AddOnce(db, &p, "likes", 5, user)
			require.NoError(t, err)
			require.True(t, ok)
		}
		removed, err = slotted.RemoveOnce(db, &p, "likes", "user:2")
		require.NoError(t, err)
		assert.True(t, removed)
		assert.EqualValues(t, 10, p.Likes)
		ok, err := slotted.AddOnce(db, &p, "likes", 1, "user:2")
		require.NoError(t, err)
		assert.True(t, ok, "liked again after the unlike")
		assert.EqualValues(t, 11, countOf(t, db, &post))

		// 48 racing undos of one key: one subtracts.
		var wins atomic.Int64
		var wg sync.WaitGroup
		for range 48 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				removed, err := slotted.RemoveOnce(db, &Post{ID: post.ID}, "likes", "user:1")
				if assert.NoError(t, err) && removed {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		assert.EqualValues(t, 1, wins.Load())
		assert.EqualValues(t, 6, countOf(t, db, &post))

		ref, err := slotted.RefOf(db, &post, "likes")
		require.NoError(t, err)
		removed, err = slotted.RemoveRefOnce(db, ref, "user:3")
		require.NoError(t, err)
		assert.True(t, removed)
		assert.EqualValues(t, 1, countOf(t, db, &post))
		assert.Equal(t, []onceRow{{RecordType: "posts.likes", RecordID: itoa(post.ID), OpKey: "user:2", Delta: 1}}, onceKeys(t, db))
	})
}

func TestAddRefOnce(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		ref := slotted.Ref{Type: "downloads", ID: "file-1"}
		for range 3 {
			_, err := slotted.AddRefOnce(db, ref, 2, "req-1")
			require.NoError(t, err)
		}
		ok, err := slotted.AddRefOnce(db, ref, 2, "req-2")
		require.NoError(t, err)
		assert.True(t, ok)
		n, err := slotted.CountRef(db, ref)
		require.NoError(t, err)
		assert.EqualValues(t, 4, n)
	})
}

func TestAddOnceExpiry(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		ref := slotted.Ref{Type: "views", ID: "1"}
		before := time.Now()
		ok, err := slotted.AddRefOnce(db, ref, 1, "live", slotted.OnceOptions{ExpireAfter: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = slotted.AddRefOnce(db, ref, 1, "forever")
		require.NoError(t, err)
		require.True(t, ok)
		keys := onceKeys(t, db)
		require.Len(t, keys, 2)
		assert.Nil(t, keys[0].ExpiresAt, "no ExpireAfter: kept forever")
		require.NotNil(t, keys[1].ExpiresAt)
		assert.WithinRange(t, *keys[1].ExpiresAt, before.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second))

		// Keys whose time has passed (seeded directly): 2500, more than one pruning batch.
		past := time.Now().UTC().Add(-time.Minute)
		expired := make([]onceRow, 2500)
		for i := range expired {
			expired[i] = onceRow{RecordType: "views", RecordID: fmt.Sprint(i % 7), OpKey: fmt.Sprintf("old:%04d", i), Delta: 1, ExpiresAt: &past}
		}
		require.NoError(t, db.Table(slotted.DefaultOnceTable).CreateInBatches(&expired, 500).Error)

		// An expired key counts as absent before any pruning: applied again, with its new expiry.
		ok, err = slotted.AddRefOnce(db, slotted.Ref{Type: "views", ID: "3"}, 1, "old:0003", slotted.OnceOptions{ExpireAfter: time.Hour})
		require.NoError(t, err)
		assert.True(t, ok)
		removed, err := slotted.RemoveRefOnce(db, slotted.Ref{Type: "views", ID: "4"}, "old:0004")
		require.NoError(t, err)
		assert.False(t, removed, "an expired key has nothing to undo")

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		passes := make(chan slotted.Pass, 1)
		done := make(chan error, 1)
		go func() {
			done <- slotted.Runner{
				Interval:  time.Hour,
				PruneKeys: true,
				OnPass: func(p slotted.Pass) {
					select {
					case passes <- p:
					default:
					}
				},
			}.Run(ctx, db)
		}()
		pass := <-passes
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, pass.Err)
		assert.EqualValues(t, 2499, pass.Pruned, "every expired key but the one applied again")
		keys = onceKeys(t, db)
		require.Len(t, keys, 3)
		var names []string
		for _, k := range keys {
			names = append(names, k.RecordID+"/"+k.OpKey)
		}
		assert.ElementsMatch(t, []string{"1/live", "1/forever", "3/old:0003"}, names)
		n, err := slotted.CountRef(db, ref)
		require.NoError(t, err)
		assert.EqualValues(t, 2, n, "pruning never touches counts")
	})
}

func TestAddOnceBadInput(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		post := Post{Title: "bad"}
		require.NoError(t, db.Create(&post).Error)
		ref := slotted.Ref{Type: "t", ID: "1"}
		for _, c := range []struct {
			key  string
			want error
		}{
			{"", slotted.ErrUnsupportedKey},
			{strings.Repeat("k", slotted.MaxKeyLen+1), slotted.ErrUnsupportedKey},
			{"a\x00b", slotted.ErrUnsupportedKey},
			{"bad\xff", slotted.ErrUnsupportedKey},
		} {
			ok, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 1, c.key)
			assert.ErrorIs(t, err, c.want, "%q", c.key)
			assert.False(t, ok)
			_, err = slotted.AddRefOnce(db, ref, 1, c.key)
			assert.ErrorIs(t, err, c.want, "%q", c.key)
			_, err = slotted.RemoveOnce(db, &Post{ID: post.ID}, "likes", c.key)
			assert.ErrorIs(t, err, c.want, "%q", c.key)
			_, err = slotted.RemoveRefOnce(db, ref, c.key)
			assert.ErrorIs(t, err, c.want, "%q", c.key)
		}
		_, err := slotted.AddOnce(db, &Post{ID: post.ID}, "likes", 1, "k", slotted.OnceOptions{ExpireAfter: -time.Second})
		assert.ErrorIs(t, err, slotted.ErrInvalidConfig)
		_, err = slotted.AddOnce(db, &Post{ID: post.ID}, "likes", math.MinInt64, "k")
		assert.ErrorIs(t, err, slotted.ErrOverflow, "an add RemoveOnce could not undo")
		_, err = slotted.AddOnce(db, Post{ID: post.ID}, "likes", 1, "k")
		assert.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		_, err = slotted.AddOnce(db, &Post{}, "likes", 1, "k")
		assert.ErrorIs(t, err, slotted.ErrMissingPrimaryKey)
		_, err = slotted.AddOnce(db, &Post{ID: post.ID}, "nope", 1, "k")
		assert.ErrorIs(t, err, slotted.ErrUnknownCounter)
		_, err = slotted.AddRefOnce(db, slotted.Ref{Type: "t"}, 1, "k")
		assert.ErrorIs(t, err, slotted.ErrMissingPrimaryKey)
		_, err = slotted.RemoveOnce(db, Post{ID: post.ID}, "likes", "k")
		assert.ErrorIs(t, err, slotted.ErrUnsupportedModel)
		assert.Zero(t, counterRows(t, db), "nothing written")
		assert.Empty(t, onceKeys(t, db))

		// The longest key fits the column on every database.
		ok, err := slotted.AddRefOnce(db, ref, 1, strings.Repeat("é", slotted.MaxKeyLen/2))
		require.NoError(t, err)
		assert.True(t, ok)
	})
}

// An add that overflows its slot fails with ErrOverflow and records no key,
// so the same key can be applied once the counter is back in range.
func TestAddOnceOverflow(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		freshOnce(t, db)
		tag := Tag{Name: "go"} // uses: one slot
		require.NoError(t, db.Create(&tag).Error)
		require.NoError(t, slotted.Reset(db, &tag, "uses", math.MaxInt64))
		ok, err := slotted.AddOnce(db, &Tag{Name: "go"}, "uses", 1, "k")
		require.ErrorIs(t, err, slotted.ErrOverflow)
		assert.False(t, ok)
		assert.Empty(t, onceKeys(t, db))
		ok, err = slotted.AddOnce(db, &Tag{Name: "go"}, "uses", -1, "k")
		require.NoError(t, err)
		assert.True(t, ok)
		n, err := slotted.Count(db, &tag, "uses")
		require.NoError(t, err)
		assert.EqualValues(t, math.MaxInt64-1, n)
	})
}
