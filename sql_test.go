package slotted_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// dryRunDB opens a dialect without connecting: statements are rendered, logged and not run.
func dryRunDB(t *testing.T, d gorm.Dialector) (*gorm.DB, *recorder) {
	t.Helper()
	rec := &recorder{}
	db, err := gorm.Open(d, &gorm.Config{DryRun: true, DisableAutomaticPing: true, Logger: rec})
	require.NoError(t, err)
	require.NoError(t, db.Use(slotted.New(slotted.Config{DisableAutoMigrate: true})))
	return db, rec
}

func TestRenderedSQL(t *testing.T) {
	cases := []struct {
		name      string
		dialector gorm.Dialector
		upsert    string
		sum       string
		load      string
	}{
		{
			name:      "mysql",
			dialector: mysql.New(mysql.Config{DSN: "u@tcp(127.0.0.1:1)/x", SkipInitializeWithVersion: true}),
			upsert:    "INSERT INTO `slotted_counters` (`record_type`,`record_id`,`slot`,`count`) VALUES ('posts.likes','7',",
		},
		{
			name:      "postgres",
			dialector: postgres.New(postgres.Config{DSN: "host=127.0.0.1 port=1"}),
		},
		{
			name:      "sqlite",
			dialector: sqlite.Open("file::memory:"),
		},
		{
			name:      "sqlserver",
			dialector: sqlserver.Open("sqlserver://u:p@127.0.0.1:1?database=x"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, rec := dryRunDB(t, tc.dialector)
			post := Post{ID: 7}
			require.NoError(t, slotted.Add(db, &post, "likes", 3))
			_, err := slotted.Count(db, &post, "likes")
			_ = err
			var posts []Post
			require.NoError(t, db.Find(&posts).Error)
			for _, s := range rec.statements() {
				t.Log(s)
			}
			assert.NotEmpty(t, rec.statements())
		})
	}
}
