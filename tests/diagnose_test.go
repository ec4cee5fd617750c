package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted"
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

		d, err := slotted.Diagnose(db, slotted.DiagnoseOptions{RecordType: "diag", Top: 2})
		require.NoError(t, err)
		require.Len(t, d.MostRows, 2)
		assert.Equal(t, "1", d.MostRows[0].ID, "40 increments over 100 slots leave the most rows")
		assert.Equal(t, "2", d.MostRows[1].ID)
		require.Len(t, d.LargestTotals, 2)
		assert.Equal(t, slotted.CounterInfo{Ref: slotted.Ref{Type: "diag", ID: "1"}, Rows: d.MostRows[0].Rows, Total: 40 * 60}, d.LargestTotals[0])

		d, err = slotted.Diagnose(db, slotted.DiagnoseOptions{})
		require.NoError(t, err)
		assert.Equal(t, "other", d.LargestTotals[0].Type)
		if dialect(db) == dbSQLite {
			assert.Empty(t, d.LockWaits, "SQLite has no view of lock waiters")
		} else {
			require.Len(t, d.LockWaits, 1)
			assert.Zero(t, d.LockWaits[0].Waiting)
			assert.NotEmpty(t, d.Server)
		}
		_, err = slotted.Diagnose(db, slotted.DiagnoseOptions{Top: -1})
		require.ErrorIs(t, err, slotted.ErrInvalidConfig)
	})
}

// TestDiagnoseLockWaits makes a writer wait on the counter table and another on the parent table, and
// checks that Diagnose sees both while they wait.
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

		var d slotted.Diagnosis
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			// InnoDB refreshes its information_schema lock views only after 100 ms without a read.
			d, err = slotted.Diagnose(db, slotted.DiagnoseOptions{ParentTables: []string{"posts"}, SkipHottest: true})
			require.NoError(t, err)
			if len(d.LockWaits) == 2 && d.LockWaits[0].Waiting >= 1 && d.LockWaits[1].Waiting >= 1 {
				break
			}
		}
		require.Len(t, d.LockWaits, 2)
		require.Positive(t, d.LockWaits[0].Waiting, "%+v", d.LockWaits)
		require.Positive(t, d.LockWaits[1].Waiting, "%+v", d.LockWaits)
		assert.Equal(t, slotted.DefaultTable, d.LockWaits[0].Table)
		assert.Equal(t, "posts", d.LockWaits[1].Table)
		assert.Positive(t, d.LockWaits[0].Longest)

		release()
		require.NoError(t, holder.Commit().Error)
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	})
}
