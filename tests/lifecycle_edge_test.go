package tests

import (
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// TestDeleteCleanupNeverTouchesSurvivors: deletes whose rows the plugin cannot know exactly leave counters
// behind (Sweep's job) rather than remove a surviving record's.
func TestDeleteCleanupNeverTouchesSurvivors(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		posts := seedPosts(t, db, 3)
		require.NoError(t, db.Model(&Post{}).Where("id > 0").Update("title", "same").Error)

		// LIMIT (honoured by MySQL's DELETE, ignored elsewhere).
		res := db.Where("title = ?", "same").Limit(1).Delete(&Post{})
		require.NoError(t, res.Error)
		var left []Post
		require.NoError(t, db.Find(&left).Error)
		for _, p := range left {
			assert.EqualValues(t, indexOf(posts, p.ID)+1, p.Likes, "post %d survived with its counter", p.ID)
		}

		// Another table holding the model's struct.
		require.NoError(t, db.Exec("CREATE TABLE posts_archive AS SELECT * FROM posts").Error)
		defer db.Migrator().DropTable("posts_archive")
		if len(left) > 0 {
			require.NoError(t, db.Table("posts_archive").Delete(&Post{ID: left[0].ID}).Error)
			n, err := slotted.Count(db, &left[0], "likes")
			require.NoError(t, err)
			assert.EqualValues(t, left[0].Likes, n, "deleting the archive copy keeps the live post's counter")
		}

		// Unscoped delete by conditions of a soft-deleted record removes its counters.
		a := Article{Title: "gone"}
		require.NoError(t, db.Create(&a).Error)
		require.NoError(t, slotted.Add(db, &a, "likes", 2))
		require.NoError(t, db.Delete(&a).Error)
		ref, _ := slotted.RefOf(db, &a, "likes")
		assert.EqualValues(t, 1, slotRows(t, db, ref), "soft delete keeps them")
		require.NoError(t, db.Unscoped().Where("id = ?", a.ID).Delete(&Article{}).Error)
		assert.Zero(t, slotRows(t, db, ref), "Unscoped delete by conditions removes them")
	})
}

func indexOf(posts []Post, id uint) int {
	for i, p := range posts {
		if p.ID == id {
			return i
		}
	}
	return -1
}

type binKey [4]byte

func (k binKey) Value() (driver.Value, error) { return k[:], nil }

type BinKeyed struct {
	ID binKey `gorm:"type:varbinary(4);primaryKey"`
	N  int    `gorm:"-" slotted:"n"`
}

func TestSweepKeepsSoftDeletedAndRefusesBinaryKeys(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		a := Article{Title: "soft"}
		require.NoError(t, db.Create(&a).Error)
		require.NoError(t, slotted.Add(db, &a, "likes", 4))
		require.NoError(t, db.Delete(&a).Error)
		prog, err := slotted.Sweep(db, &Article{})
		require.NoError(t, err)
		assert.Zero(t, prog.Orphans)
		n, err := slotted.Count(db, &a, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 4, n, "a soft-deleted record keeps its counters for a restore")

		_, err = slotted.Sweep(db, &BinKeyed{})
		require.ErrorIs(t, err, slotted.ErrUnsupportedKey)
	})
}

// TestResetRacingOnNewCounters: concurrent Resets of counters that have no rows yet, some of the same
// counter, neighbours in key order (the case that deadlocked on InnoDB gap locks and hit duplicate keys).
func TestResetRacingOnNewCounters(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		errs := run(40, func(w int) error {
			return slotted.ResetRef(db, slotted.Ref{Type: "fresh.reset", ID: fmt.Sprintf("%03d", w%20)}, 7)
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		for i := 0; i < 20; i++ {
			n, err := slotted.CountRef(db, slotted.Ref{Type: "fresh.reset", ID: fmt.Sprintf("%03d", i)})
			require.NoError(t, err)
			assert.EqualValues(t, 7, n, "counter %d: two Resets to 7 make 7", i)
		}
	})
}

// TestSQLiteFailedCommitDoesNotLeakTransaction: in rollback-journal mode a reader blocks COMMIT with
// SQLITE_BUSY; the write transaction must be rolled back, not handed back to the pool still open.
func TestSQLiteFailedCommitDoesNotLeakTransaction(t *testing.T) {
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "journal.db"), 0, false) // rollback journal
	open := func() *gorm.DB {
		db, err := gorm.Open(sqliteOpen(dsn), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, _ := db.DB()
		t.Cleanup(func() { sqlDB.Close() })
		return db
	}
	db := open()
	require.NoError(t, db.Use(slotted.New(slotted.Config{MaxRetries: 2, MinRetryBackoff: 1, MaxRetryBackoff: 2})))
	ref := slotted.Ref{Type: "journal", ID: "1"}
	for i := 0; i < 30; i++ {
		require.NoError(t, slotted.AddRef(db, ref, 1))
	}

	reader := open()
	sqlReader, _ := reader.DB()
	sqlReader.SetMaxOpenConns(1)
	require.NoError(t, reader.Exec("BEGIN").Error)
	var n int64
	require.NoError(t, reader.Raw("SELECT count(*) FROM slotted_counters").Scan(&n).Error) // holds SHARED

	err := slotted.CompactRef(db, ref)
	require.Error(t, err, "COMMIT cannot get past the reader")
	assert.Equal(t, slotted.Busy, slotted.ConflictOf(err))
	require.NoError(t, reader.Exec("COMMIT").Error)

	require.NoError(t, slotted.CompactRef(db, ref), "the pool holds no half-open transaction")
	require.NoError(t, slotted.AddRef(db, ref, 1))
	fresh := open()
	require.NoError(t, fresh.Use(slotted.New(slotted.Config{DisableAutoMigrate: true})))
	total, err := slotted.CountRef(fresh, ref)
	require.NoError(t, err)
	assert.EqualValues(t, 31, total, "committed and visible to another connection")
	var rows int64
	require.NoError(t, fresh.Table("slotted_counters").Count(&rows).Error)
	assert.LessOrEqual(t, rows, int64(2))
}
