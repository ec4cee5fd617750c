package tests

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted"
)

// singleConn pins db to one connection and makes lock waits fail fast on it,
// so a held lock turns into the error the retry loop must handle.
func singleConn(t *testing.T, db *gorm.DB) {
	t.Helper()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(1)
	switch dialect(db) {
	case dbMySQL:
		require.NoError(t, db.Exec("SET SESSION innodb_lock_wait_timeout = 1").Error)
	case dbPostgres:
		require.NoError(t, db.Exec("SET lock_timeout = '100ms'").Error)
	default:
		require.NoError(t, db.Exec("PRAGMA busy_timeout = 0").Error)
	}
}

// holdLock locks the counter rows of ref from another connection until release is called.
func holdLock(t *testing.T, db *gorm.DB, ref slotted.Ref) (release func()) {
	t.Helper()
	other := openRaw(t, dialect(db))
	sqlDB, err := other.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(1)
	if dialect(db) == dbSQLite {
		require.NoError(t, other.Exec("BEGIN IMMEDIATE").Error) // SQLite locks the whole database
		return func() { require.NoError(t, other.Exec("COMMIT").Error) }
	}
	tx := other.Begin()
	var counts []int64
	require.NoError(t, tx.Table(slotted.DefaultTable).Select("count").
		Where("record_type = ? AND record_id = ?", ref.Type, ref.ID).Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Find(&counts).Error)
	require.NotEmpty(t, counts)
	return func() { require.NoError(t, tx.Commit().Error) }
}

// lockedTag makes a one-slot counter, pins db to one fast-failing connection, and locks the counter's row
// from another connection until release is called.
func lockedTag(t *testing.T, db *gorm.DB, name string) (tag Tag, release func()) {
	t.Helper()
	tag = Tag{Name: name} // slots:1, so the held row is the only row
	require.NoError(t, slotted.Increment(db, &tag, "uses"))
	singleConn(t, db)
	ref, err := slotted.RefOf(db, &tag, "uses")
	require.NoError(t, err)
	return tag, holdLock(t, db, ref)
}

func TestRetryOutsideTransaction(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		tag, release := lockedTag(t, db, "locked")
		hold := 300 * time.Millisecond
		if dialect(db) == dbMySQL {
			hold = 1500 * time.Millisecond // InnoDB's smallest lock wait timeout is 1s
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); time.Sleep(hold); release() }()

		rdb, rec := recorded(db)
		require.NoError(t, slotted.Increment(rdb, &tag, "uses"), "retried until the lock was released")
		wg.Wait()
		assert.GreaterOrEqual(t, rec.count("INSERT INTO"), 1, "the attempt that succeeded is traced; those that conflicted are not (retrylog.go)")
		st, err := slotted.StatsOf(db)
		require.NoError(t, err)
		assert.NotZero(t, st.Retries, "the first attempt failed and was retried")
		n, err := slotted.Count(db, &tag, "uses")
		require.NoError(t, err)
		assert.EqualValues(t, 2, n, "exactly one increment landed")
	}, slotted.Config{MaxRetries: 20, MinRetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 200 * time.Millisecond})
}

func TestNoRetryInsideTransaction(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		tag, release := lockedTag(t, db, "locked-tx")

		rdb, rec := recorded(db)
		err := rdb.Transaction(func(tx *gorm.DB) error { return slotted.Increment(tx, &tag, "uses") })
		release()
		require.Error(t, err)
		assert.True(t, retryable(err), "a lock conflict is reported as such: %v", err)
		assert.Equal(t, 1, rec.count("INSERT INTO"), "not retried inside the caller's transaction")
		n, err := slotted.Count(db, &tag, "uses")
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
	}, slotted.Config{MaxRetries: 20})
}

// TestRetryableDeadlock produces a real deadlock on the servers and checks that it is classified as retryable.
func TestRetryableDeadlock(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		if dialect(db) == dbSQLite {
			t.Skip("SQLite has one writer and no deadlocks; its busy error is covered by the retry tests")
		}
		for _, id := range []string{"a", "b"} {
			require.NoError(t, db.Create(&slotted.SlottedCounter{RecordType: "dl", RecordID: slotted.Key(id), Count: 1}).Error)
		}
		lock := func(tx *gorm.DB, id string) error {
			return tx.Exec("UPDATE slotted_counters SET count = count + 1 WHERE record_type = 'dl' AND record_id = ?", id).Error
		}
		tx1, tx2 := openRaw(t, dialect(db)).Begin(), openRaw(t, dialect(db)).Begin()
		require.NoError(t, lock(tx1, "a"))
		require.NoError(t, lock(tx2, "b"))
		errs := make(chan error, 2)
		go func() { errs <- lock(tx1, "b") }()
		time.Sleep(200 * time.Millisecond) // let tx1 start waiting on b
		go func() { errs <- lock(tx2, "a") }()
		first := <-errs
		tx1.Rollback()
		tx2.Rollback()
		second := <-errs
		deadlock := errors.Join(first, second)
		require.Error(t, deadlock)
		assert.True(t, retryable(deadlock), "%v", deadlock)
		assert.False(t, retryable(errors.New("Error 1062 (23000): Duplicate entry")))
	})
}
