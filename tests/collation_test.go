package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestKeysAreByteExact documents the behaviour on a case-insensitive
// collation (MariaDB's default utf8mb4 collations): the parent table matches
// 'ABC' to the row 'abc', but counter keys compare bytes, so a counter written
// through the key 'ABC' is another counter than the row's. A model loaded from
// the database carries the stored spelling, and writes through it land on the
// row's counter.
func TestKeysAreByteExact(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		if dialect(db) != dbMySQL {
			t.Skip("PostgreSQL and SQLite compare the parent's text key byte by byte too: one spelling, one row")
		}
		require.NoError(t, db.Create(&Tag{Name: "abc"}).Error)
		var loaded Tag
		require.NoError(t, db.First(&loaded, "name = ?", "ABC").Error)
		require.Equal(t, "abc", loaded.Name, "the collation matched another spelling")
		require.NoError(t, slotted.Increment(db, &loaded, "uses"))           // the stored spelling: the row's counter
		require.NoError(t, slotted.Increment(db, &Tag{Name: "ABC"}, "uses")) // a key typed by hand: a counter of its own

		var again Tag
		require.NoError(t, db.First(&again, "name = ?", "ABC").Error)
		assert.Equal(t, 1, again.Uses, "auto-fill reads the stored spelling's counter only")
		n, err := slotted.Count(db, &Tag{Name: "ABC"}, "uses")
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
	})
}
