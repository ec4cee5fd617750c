package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/slotted-go/slotted"
)

// prefixedDB opens a pool whose NamingStrategy prefixes tables with "app_".
func prefixedDB(t *testing.T, name string) *gorm.DB {
	t.Helper()
	db := openRaw(t, name)
	db.Config.NamingStrategy = schema.NamingStrategy{TablePrefix: "app_"}
	return db
}

func dropNamingTables(t *testing.T, name string) {
	t.Helper()
	db := openRaw(t, name)
	require.NoError(t, db.Migrator().DropTable("app_posts", "app_slotted_counters", "app_slotted_once", "posts",
		slotted.DefaultTable, slotted.DefaultOnceTable, "my_counters", "app_my_counters"))
}

// TestTablePrefix: the counter and once tables take gorm's TablePrefix like
// the models' tables; a Config.Table is used as it is; a database that has the
// unprefixed tables of an earlier version keeps them.
func TestTablePrefix(t *testing.T) {
	for _, name := range dbNames(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("fresh", func(t *testing.T) {
				dropNamingTables(t, name)
				db := prefixedDB(t, name)
				p := slotted.New(slotted.Config{})
				require.NoError(t, db.Use(p))
				assert.Equal(t, "app_slotted_counters", p.Config().Table)
				assert.Equal(t, "app_slotted_once", p.Config().OnceTable)
				require.NoError(t, db.AutoMigrate(&Post{}))
				post := Post{Title: "prefixed"}
				require.NoError(t, db.Create(&post).Error)
				require.NoError(t, slotted.Increment(db, &post, "likes"))
				_, err := slotted.AddOnce(db, &post, "likes", 1, "k")
				require.NoError(t, err)
				assert.True(t, db.Migrator().HasTable("app_slotted_counters"))
				assert.True(t, db.Migrator().HasTable("app_slotted_once"))
				assert.False(t, db.Migrator().HasTable(slotted.DefaultTable))
				var rows int64
				require.NoError(t, db.Table("app_slotted_counters").Count(&rows).Error)
				assert.NotZero(t, rows)
				n, err := slotted.Count(db, &post, "likes")
				require.NoError(t, err)
				assert.EqualValues(t, 2, n)
			})
			t.Run("explicit", func(t *testing.T) {
				dropNamingTables(t, name)
				db := prefixedDB(t, name)
				p := slotted.New(slotted.Config{Table: "my_counters"})
				require.NoError(t, db.Use(p))
				assert.Equal(t, "my_counters", p.Config().Table)
				assert.Equal(t, "app_slotted_once", p.Config().OnceTable)
			})
			t.Run("upgrade", func(t *testing.T) {
				dropNamingTables(t, name)
				old := openRaw(t, name) // an earlier version's tables: unprefixed
				require.NoError(t, old.Use(slotted.New(slotted.Config{})))
				require.NoError(t, slotted.AddRef(old, slotted.Ref{Type: "app_posts.likes", ID: "1"}, 7))
				db := prefixedDB(t, name)
				p := slotted.New(slotted.Config{})
				require.NoError(t, db.Use(p))
				assert.Equal(t, slotted.DefaultTable, p.Config().Table)
				assert.Equal(t, slotted.DefaultOnceTable, p.Config().OnceTable)
				n, err := slotted.CountRef(db, slotted.Ref{Type: "app_posts.likes", ID: "1"})
				require.NoError(t, err)
				assert.EqualValues(t, 7, n, "the existing counters are still seen")
			})
		})
	}
}
