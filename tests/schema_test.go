package tests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// primaryKey returns the counter table's primary-key columns in key order, read from the catalog.
func primaryKey(t *testing.T, db *gorm.DB, table string) []string {
	t.Helper()
	var cols []string
	var err error
	switch dialect(db) {
	case dbMySQL:
		err = db.Raw(`SELECT column_name FROM information_schema.key_column_usage
			WHERE table_schema = DATABASE() AND table_name = ? AND constraint_name = 'PRIMARY' ORDER BY ordinal_position`, table).Scan(&cols).Error
	case dbPostgres:
		err = db.Raw(`SELECT a.attname FROM pg_index i
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = ?::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, table).Scan(&cols).Error
	default:
		var info []struct {
			Name string
			Pk   int
		}
		err = db.Raw("SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", table).Scan(&info).Error
		for _, c := range info {
			cols = append(cols, c.Name)
		}
	}
	require.NoError(t, err)
	return cols
}

func TestSchema(t *testing.T) {
	for _, table := range []string{slotted.DefaultTable, "custom_counters"} {
		t.Run(table, func(t *testing.T) {
			testEachDB(t, func(t *testing.T, db *gorm.DB) {
				assert.Equal(t, []string{"record_type", "record_id", "slot"}, primaryKey(t, db, table),
					"(record_type, record_id, slot) is the composite primary key")

				types, err := db.Migrator().ColumnTypes(table)
				require.NoError(t, err)
				var names []string
				for _, ct := range types {
					names = append(names, ct.Name())
					auto, _ := ct.AutoIncrement()
					assert.False(t, auto, "%s is not auto-increment", ct.Name())
					nullable, ok := ct.Nullable()
					if ok {
						assert.False(t, nullable, "%s is NOT NULL", ct.Name())
					}
					if dialect(db) == dbMySQL && (ct.Name() == "record_type" || ct.Name() == "record_id") {
						assert.Equal(t, "VARBINARY", strings.ToUpper(ct.DatabaseTypeName()), "byte-exact keys on MySQL")
					}
				}
				assert.ElementsMatch(t, []string{"record_type", "record_id", "slot", "count"}, names, "no id column")

				var indexes int
				if dialect(db) == dbPostgres {
					require.NoError(t, db.Raw("SELECT count(*) FROM pg_indexes WHERE tablename = ?", table).Scan(&indexes).Error)
					assert.Equal(t, 1, indexes, "the primary key is the only index")
				}
				if dialect(db) == dbSQLite {
					var ddl string
					require.NoError(t, db.Raw("SELECT sql FROM sqlite_master WHERE name = ?", table).Scan(&ddl).Error)
					assert.Contains(t, ddl, "WITHOUT ROWID")
				}

				// Migrating again changes nothing.
				rdb, rec := recorded(db)
				require.NoError(t, slotted.Migrate(rdb))
				for _, s := range rec.statements() {
					assert.NotRegexp(t, `(?i)^\s*(ALTER|CREATE|DROP)`, s)
				}

				// The custom table is the one written to.
				post := Post{Title: "schema"}
				require.NoError(t, db.Create(&post).Error)
				require.NoError(t, slotted.Increment(db, &post, "likes"))
				var n int64
				require.NoError(t, db.Table(table).Where("record_type <> ?", slotted.MarkerType).Count(&n).Error)
				assert.EqualValues(t, 1, n)
			}, slotted.Config{Table: table})
		})
	}
}

func TestDisableAutoMigrate(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		assert.False(t, db.Migrator().HasTable("manual_counters"))
		require.NoError(t, slotted.Migrate(db))
		assert.True(t, db.Migrator().HasTable("manual_counters"))
		require.NoError(t, db.Migrator().DropTable("manual_counters"))
	}, slotted.Config{Table: "manual_counters", DisableAutoMigrate: true})
}
