package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// TestCounterCacheCreateStatements: a counted Create runs the child's INSERT
// and one upsert for all its parents' counters, nothing else (no read-back
// when every condition has a Match and no column is left out). On
// MySQL/MariaDB the upsert is prepared once per connection inside the
// transaction: 20 Creates in one transaction prepare 20 INSERTs (gorm's own,
// unprepared) and the upsert once, not 40 statements.
func TestCounterCacheCreateStatements(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 2)
		a, b := ids[0], ids[1]

		// The Where-only "popular" cache reads back: drop it from this check by a
		// child model without it (Invoice: count and Sum, belongs-to).
		require.NoError(t, db.Create(&Customer{ID: "c1"}).Error)
		rdb, rec := recorded(db)
		require.NoError(t, rdb.Create(&Invoice{CustomerID: "c1", Total: 5}).Error)
		assert.Len(t, rec.statements(), 2, "INSERT and one upsert: %q", rec.statements())
		assert.Equal(t, 1, rec.count("slotted_counters"), "%q", rec.statements())

		// Reply reads its rows back (the Where-only "popular" cache): the
		// INSERT and that SELECT are gorm's own statements, prepared per call by
		// the driver; the upsert adds none once its statement is prepared.
		creates := func(n int) (prepared int64) {
			require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
				var name string
				var before, after int64
				if dialect(db) == dbMySQL {
					require.NoError(t, tx.Raw("SHOW SESSION STATUS LIKE 'Com_stmt_prepare'").Row().Scan(&name, &before))
				}
				for i := range n {
					if err := tx.Create(&Reply{TopicID: ptr([]uint{a, b}[i%2]), Published: true}).Error; err != nil {
						return err
					}
				}
				if dialect(db) == dbMySQL {
					require.NoError(t, tx.Raw("SHOW SESSION STATUS LIKE 'Com_stmt_prepare'").Row().Scan(&name, &after))
				}
				prepared = after - before
				return nil
			}))
			return prepared
		}
		if dialect(db) == dbMySQL {
			// The first upserts run unprepared while the statement is prepared on
			// another connection in the background.
			require.Eventually(t, func() bool { return creates(4) == 2*4 }, 20*time.Second, 50*time.Millisecond)
			assert.Equal(t, int64(2*20), creates(20), "an INSERT and a SELECT per Create, no upsert (%d with it)", 3*20)
		} else {
			creates(20)
		}
		requireTopicsExact(t, db, a, b)
	})
}

// TestCounterCacheLockReads: a statement with conditions of its own reads the
// candidate keys without locks, then locks the rows by primary key in key
// order (MySQL/MariaDB and PostgreSQL; SQLite reads once); a statement by
// primary key locks by primary key at once.
func TestCounterCacheLockReads(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		cacheDB(t, db)
		ids := newTopics(t, db, 2)
		a, b := ids[0], ids[1]
		rs := []Reply{{TopicID: ptr(a), Points: 1}, {TopicID: ptr(a), Points: 2}, {TopicID: ptr(a), Points: 30}}
		require.NoError(t, db.Create(&rs).Error)

		rdb, rec := recorded(db)
		require.NoError(t, rdb.Model(&Reply{}).Where("topic_id = ? AND points < ?", a, 10).Update("topic_id", b).Error)
		selects := rec.count("SELECT", "FROM", "replies")
		if dialect(db) == dbSQLite {
			assert.Equal(t, 2, selects, "before and after: %q", rec.statements())
		} else {
			assert.Equal(t, 3, selects, "candidates, locked before, after: %q", rec.statements())
			assert.Equal(t, 2, rec.count("FOR UPDATE"), "%q", rec.statements())
		}
		requireTopicsExact(t, db, a, b)

		rdb, rec = recorded(db)
		require.NoError(t, rdb.Delete(&Reply{}, rs[2].ID).Error)
		assert.Equal(t, 1, rec.count("SELECT", "FROM", "replies"), "by primary key: one read: %q", rec.statements())
		requireTopicsExact(t, db, a, b)
	})
}
