package tests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestWithOnceKeyRefusesBadKeys: a key Applied would refuse (NUL, invalid
// UTF-8, longer than MaxKeyLen) is ErrUnsupportedKey from the Find that
// carries it, before any SQL, on every database. PostgreSQL used to answer
// with its own 22021 from the fill, MariaDB and SQLite with "not liked".
func TestWithOnceKeyRefusesBadKeys(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stories := migrateStories(t, db)
		_, err := slotted.AddOnce(db, &stories[0], "likes", 1, "user:1")
		require.NoError(t, err)
		for _, key := range []string{"user\x00:1", "user:\xff", strings.Repeat("k", slotted.MaxKeyLen+1)} {
			rec, r := recorded(db)
			var found []Story
			err := slotted.WithOnceKey(rec, key).Order("id").Find(&found).Error
			require.ErrorIs(t, err, slotted.ErrUnsupportedKey, "%q", key)
			require.Empty(t, found, "%q", key)
			require.Empty(t, r.statements(), "%q: refused before any SQL", key)
			var one Story
			require.ErrorIs(t, slotted.WithOnceKey(db, key).First(&one).Error, slotted.ErrUnsupportedKey, "%q", key)
			_, err = slotted.Applied(db, &stories[0], "likes", key)
			require.ErrorIs(t, err, slotted.ErrUnsupportedKey, "%q: as Applied", key)
		}
		// A good key, and no key at all, still fill.
		var found []Story
		require.NoError(t, slotted.WithOnceKey(db, "user:1").Order("id").Find(&found).Error)
		require.True(t, found[0].Liked)
		require.False(t, found[1].Liked)
		require.NoError(t, slotted.WithOnceKey(db, "").Order("id").Find(&found).Error)
		require.False(t, found[0].Liked, "no key: applied fields stay false")
	})
}
