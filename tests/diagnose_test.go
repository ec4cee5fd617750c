package tests

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/slotted-go/slotted"
	"github.com/slotted-go/slotted/diagnose"
)

func TestDiagnoseHottest(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		for i, n := range []int{3, 40, 12} {
			ref := slotted.Ref{Type: "diag", ID: itoa(uint(i))}
			for j := 0; j < n; j++ {
				require.NoError(t, slotted.AddRef(db, ref, int64(100-n)))
			}
		}
		require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "other", ID: "x"}, 1_000_000))

		// The caller's Model/Where state does not leak into the diagnostic queries.
		r, err := diagnose.Run(db.Model(&Post{}).Where("id = ?", -1), diagnose.Options{RecordType: "diag", Top: 2})
		require.NoError(t, err)
		require.Len(t, r.MostRows, 2)
		assert.Equal(t, "1", r.MostRows[0].ID, "40 increments over 100 slots leave the most rows")
		assert.Equal(t, "2", r.MostRows[1].ID)
		require.Len(t, r.LargestTotals, 2)
		assert.Equal(t, diagnose.Counter{Ref: slotted.Ref{Type: "diag", ID: "1"}, Rows: r.MostRows[0].Rows, Total: 40 * 60}, r.LargestTotals[0])

		r, err = diagnose.Run(db, diagnose.Options{})
		require.NoError(t, err)
		assert.Equal(t, "other", r.LargestTotals[0].Type)
		if dialect(db) == dbSQLite {
			assert.Empty(t, r.LockWaits, "SQLite has no view of lock waiters")
			assert.Empty(t, r.Server)
		} else {
			require.Len(t, r.LockWaits, 1)
			assert.Equal(t, slotted.DefaultTable, r.LockWaits[0].Table)
			assert.Zero(t, r.LockWaits[0].Waiting)
			assert.NotEmpty(t, r.Server)
		}
		_, err = diagnose.Run(db, diagnose.Options{Top: -1})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
	})
}

func TestDiagnoseBadInput(t *testing.T) {
	_, err := diagnose.Run(nil, diagnose.Options{})
	require.ErrorIs(t, err, slotted.ErrNotRegistered)
	_, err = diagnose.LockWaits(nil, "posts")
	require.ErrorIs(t, err, gorm.ErrInvalidDB)
	_, err = diagnose.ServerCounters(nil)
	require.ErrorIs(t, err, gorm.ErrInvalidDB)

	plain := openRaw(t, dbSQLite) // no plugin
	_, err = diagnose.Run(plain, diagnose.Options{})
	require.ErrorIs(t, err, slotted.ErrNotRegistered)
	w, err := diagnose.LockWaits(plain)
	require.NoError(t, err)
	assert.Nil(t, w, "no tables, nothing to count")
}

// TestDiagnoseLockWaits makes a writer wait on the counter table and another on the parent table, and
// checks that Run and LockWaits see both while they wait.
func TestDiagnoseLockWaits(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		if dialect(db) == dbSQLite {
			t.Skip("SQLite locks the whole database and exposes no waiters; Stats counts its busy errors")
		}
		post := Post{Title: "diag"}
		require.NoError(t, db.Create(&post).Error)
		tag := Tag{Name: "diag"} // one slot: every writer waits on the same row
		require.NoError(t, slotted.Increment(db, &tag, "uses"))
		ref, _ := slotted.RefOf(db, &tag, "uses")
		release := holdLock(t, db, ref)

		holder := openRaw(t, dialect(db)).Begin()
		require.NoError(t, holder.Model(&Post{}).Where("id = ?", post.ID).Clauses(clause.Locking{Strength: "UPDATE"}).Find(&[]Post{}).Error)

		writerDB := openRaw(t, dialect(db))
		require.NoError(t, writerDB.Use(slotted.New(slotted.Config{DisableAutoMigrate: true})))
		done := make(chan error, 2)
		go func() { done <- slotted.Increment(writerDB, &tag, "uses") }()
		go func() { done <- writerDB.Model(&Post{}).Where("id = ?", post.ID).Update("title", "waited").Error }()

		var r diagnose.Report
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			// InnoDB refreshes its information_schema lock views only after 100 ms without a read.
			r, err = diagnose.Run(db, diagnose.Options{ParentTables: []string{"posts"}, SkipHottest: true})
			require.NoError(t, err)
			if len(r.LockWaits) == 2 && r.LockWaits[0].Waiting >= 1 && r.LockWaits[1].Waiting >= 1 {
				break
			}
		}
		require.Len(t, r.LockWaits, 2)
		require.Positive(t, r.LockWaits[0].Waiting, "%+v", r.LockWaits)
		require.Positive(t, r.LockWaits[1].Waiting, "%+v", r.LockWaits)
		assert.Equal(t, slotted.DefaultTable, r.LockWaits[0].Table)
		assert.Equal(t, "posts", r.LockWaits[1].Table)
		assert.Positive(t, r.LockWaits[0].Longest)

		// The probe on its own: the tables in the order given, a table nobody waits on at zero.
		time.Sleep(150 * time.Millisecond)
		w, err := diagnose.LockWaits(db, "posts", "articles", slotted.DefaultTable)
		require.NoError(t, err)
		require.Len(t, w, 3)
		assert.Equal(t, []string{"posts", "articles", slotted.DefaultTable}, []string{w[0].Table, w[1].Table, w[2].Table})
		assert.Positive(t, w[0].Waiting, "%+v", w)
		assert.Zero(t, w[1].Waiting, "%+v", w)
		assert.Positive(t, w[2].Waiting, "%+v", w)
		server, err := diagnose.ServerCounters(db)
		require.NoError(t, err)
		if dialect(db) == dbMySQL {
			assert.GreaterOrEqual(t, server["Innodb_row_lock_current_waits"], int64(2), "live, server-wide: ours at least")
			assert.Contains(t, server, "Innodb_row_lock_waits")
		} else {
			assert.Contains(t, server, "deadlocks")
		}

		release()
		require.NoError(t, holder.Commit().Error)
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	})
}

// TestDiagnoseRouting: with dbresolver, the diagnostic reads go to the source
// (the primary, whose locks they are about) although they are SELECTs, and to
// a replica only when the caller asks with dbresolver.Read. SQLite files make
// the two tellable apart, as in TestDBResolver.
func TestDiagnoseRouting(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqliteOpen(sqliteDSN(filepath.Join(dir, name), 5000, false))
	}
	db, err := gorm.Open(open("source.db"), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	replica, err := gorm.Open(open("replica.db"), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, replica.Use(slotted.New(slotted.Config{}))) // the replica has the table, empty
	require.NoError(t, db.Use(slotted.New(slotted.Config{})))
	require.NoError(t, db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{open("replica.db")}})))
	require.NoError(t, slotted.AddRef(db, slotted.Ref{Type: "routed", ID: "1"}, 7))

	n, err := slotted.CountRef(db, slotted.Ref{Type: "routed", ID: "1"})
	require.NoError(t, err)
	require.Zero(t, n, "a plain read goes to the replica here")

	r, err := diagnose.Run(db, diagnose.Options{})
	require.NoError(t, err)
	require.Len(t, r.LargestTotals, 1, "Run read the source")
	assert.Equal(t, int64(7), r.LargestTotals[0].Total)

	r, err = diagnose.Run(db.Clauses(dbresolver.Read), diagnose.Options{})
	require.NoError(t, err)
	assert.Empty(t, r.LargestTotals, "dbresolver.Read: the replica, as asked")

	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		require.NoError(t, slotted.AddRef(tx, slotted.Ref{Type: "routed", ID: "2"}, 5))
		r, err := diagnose.Run(tx, diagnose.Options{})
		require.NoError(t, err)
		assert.Len(t, r.LargestTotals, 2, "inside a transaction: the transaction's own view")
		return nil
	}))
}

func Example_diagnose() {
	db, done := exampleDB()
	defer done()

	post := Post{Title: "Hello"}
	db.Create(&post)
	for range 3 {
		if err := slotted.Increment(db, &post, "likes"); err != nil {
			fmt.Println(err)
		}
	}

	r, err := diagnose.Run(db, diagnose.Options{ParentTables: []string{"posts"}, Top: 1})
	if err != nil {
		panic(err)
	}
	top := r.LargestTotals[0]
	fmt.Println(r.Dialect, top.Type, top.ID, top.Total, len(r.LockWaits))
	// Output: sqlite posts.likes 1 3 0
}
