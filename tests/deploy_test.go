package tests

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// dialectorFor returns a new dialector on the test's database (the same SQLite
// file as openRaw's), for opening pools without the harness's help.
func dialectorFor(t *testing.T, name string) gorm.Dialector {
	t.Helper()
	switch name {
	case dbMySQL:
		return mysql.Open(os.Getenv("SLOTTED_MYSQL_DSN"))
	case dbPostgres:
		return postgres.Open(os.Getenv("SLOTTED_POSTGRES_DSN"))
	}
	dsn, ok := sqliteDSNs.Load(t)
	require.True(t, ok, "openRaw was called for this test")
	return sqliteOpen(dsn.(string))
}

// TestConcurrentFirstStart: eight instances of an application start at once
// on a database without the counter table (a rolling deploy of a new
// install), each with its own pool: gorm.Open and db.Use. Every one succeeds,
// five rounds in a row, and the table they agree on works.
func TestConcurrentFirstStart(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		const instances, rounds = 8, 5
		for round := range rounds {
			require.NoError(t, db.Migrator().DropTable(slotted.DefaultTable))
			// Each instance opens its pool (and connects) first, then all
			// register the plugin at the same moment: the migrations overlap.
			var ready, opened sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, instances)
			ready.Add(instances)
			opened.Add(instances)
			for range instances {
				go func() {
					defer opened.Done()
					inst, err := gorm.Open(dialectorFor(t, dialect(db)), &gorm.Config{Logger: logger.Discard})
					ready.Done()
					<-start
					if err == nil {
						err = inst.Use(slotted.New(slotted.Config{}))
						if sqlDB, dbErr := inst.DB(); dbErr == nil {
							_ = sqlDB.Close()
						}
					}
					errs <- err
				}()
			}
			ready.Wait()
			close(start)
			opened.Wait()
			for i := range instances {
				assert.NoError(t, <-errs, "round %d, instance %d", round, i)
			}
		}
		assert.Equal(t, []string{"record_type", "record_id", "slot"}, primaryKey(t, db, slotted.DefaultTable))
		post := Post{Title: "after the deploy"}
		require.NoError(t, db.Create(&post).Error)
		require.NoError(t, slotted.Add(db, &post, "likes", 3))
		n, err := slotted.Count(db, &post, "likes")
		require.NoError(t, err)
		assert.EqualValues(t, 3, n)
	})
}
