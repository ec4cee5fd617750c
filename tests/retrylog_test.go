package tests

import (
	"bytes"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// syncBuffer is a bytes.Buffer for a logger written from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// conflictLines counts the log lines that report a lock conflict.
func conflictLines(out string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		for _, frag := range []string{"Error 1205", "Error 1213", "55P03", "40P01", "lock timeout", "database is locked", "SQLITE_BUSY"} {
			if strings.Contains(line, frag) {
				n++
				break
			}
		}
	}
	return n
}

// impatient opens a pool on the test's database whose lock waits fail fast
// (InnoDB's 1 s minimum, PostgreSQL's lock_timeout 50ms, SQLite without busy
// timeout), logging through gorm's default logger into out, with the plugin.
func impatient(t *testing.T, db *gorm.DB, out *syncBuffer, cfg slotted.Config, level ...logger.LogLevel) *gorm.DB {
	t.Helper()
	var d gorm.Dialector
	switch dialect(db) {
	case dbMySQL:
		d = mysql.Open(os.Getenv("SLOTTED_MYSQL_DSN") + "&innodb_lock_wait_timeout=1")
	case dbPostgres:
		d = postgres.Open(os.Getenv("SLOTTED_POSTGRES_DSN") + " lock_timeout=50ms")
	default:
		file, ok := sqliteDSNs.Load(t)
		require.True(t, ok)
		path, _, _ := strings.Cut(strings.TrimPrefix(file.(string), "file:"), "?")
		d = sqliteOpen(sqliteDSN(path, 20, true)) // 20 ms: writers still give up on the held lock, not so often on each other
	}
	lv := logger.Warn
	if len(level) > 0 {
		lv = level[0]
	}
	lg := logger.New(log.New(out, "\r\n", log.LstdFlags), logger.Config{SlowThreshold: 10 * time.Second, LogLevel: lv})
	w, err := gorm.Open(d, &gorm.Config{Logger: lg})
	require.NoError(t, err)
	sqlDB, err := w.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(16)
	t.Cleanup(func() { _ = sqlDB.Close() })
	require.NoError(t, w.Use(slotted.New(cfg)))
	return w
}

// TestRetriedConflictsNotLogged: 64 writers run into a lock held by another
// connection, their statements fail with lock conflicts and are retried until
// the lock goes away. Every call succeeds, so gorm's default logger prints no
// error line; the retries show in Stats. Run with and without coalescing.
func TestRetriedConflictsNotLogged(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		name := map[bool]string{false: "per-op", true: "coalesced"}[coalesce]
		t.Run(name, func(t *testing.T) {
			testEachDB(t, func(t *testing.T, db *gorm.DB) {
				tag := Tag{Name: "held"}
				require.NoError(t, slotted.Increment(db, &tag, "uses")) // slots:1: the held row is every writer's row
				ref, err := slotted.RefOf(db, &tag, "uses")
				require.NoError(t, err)
				var out syncBuffer
				cfg := slotted.Config{MaxRetries: 200, MinRetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond,
					DisableCoalescing: !coalesce}
				w := impatient(t, db, &out, cfg)
				hold := 400 * time.Millisecond
				if dialect(db) == dbMySQL {
					hold = 1500 * time.Millisecond
				}
				release := holdLock(t, db, ref)
				go func() { time.Sleep(hold); release() }()
				const perWriter = 5
				errs := run(64, func(int) error {
					mine := Tag{Name: tag.Name}
					for range perWriter {
						if err := slotted.Increment(w, &mine, "uses"); err != nil {
							return err
						}
					}
					return nil
				})
				for _, err := range errs {
					require.NoError(t, err)
				}
				st, err := slotted.StatsOf(w)
				require.NoError(t, err)
				require.NotZero(t, st.Retries, "the writers met the lock and were retried")
				n, err := slotted.Count(db, &tag, "uses")
				require.NoError(t, err)
				assert.EqualValues(t, 1+64*perWriter, n)
				assert.Zero(t, conflictLines(out.String()), "no conflict reached the logger:\n%s", out.String())
				t.Logf("%d retries, %v; log: %d bytes", st.Retries, st.Conflicts, len(out.String()))
			})
		})
	}
}

// TestFinalConflictLogged: a conflict that ends the retries is the caller's
// error and gorm's logger prints it, once per failed call.
func TestFinalConflictLogged(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		tag := Tag{Name: "held-final"}
		require.NoError(t, slotted.Increment(db, &tag, "uses"))
		ref, err := slotted.RefOf(db, &tag, "uses")
		require.NoError(t, err)
		var out syncBuffer
		w := impatient(t, db, &out, slotted.Config{MaxRetries: 2, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
			DisableCoalescing: true})
		release := holdLock(t, db, ref)
		err = slotted.Increment(w, &Tag{Name: tag.Name}, "uses")
		release()
		require.Error(t, err)
		require.True(t, retryable(err), "%v", err)
		assert.Equal(t, 1, conflictLines(out.String()), "the final conflict, once:\n%s", out.String())
		st, err := slotted.StatsOf(w)
		require.NoError(t, err)
		assert.EqualValues(t, 2, st.Retries)

		// At Info level each retried conflict is a line of its own, not an error trace.
		var info syncBuffer
		w = impatient(t, db, &info, slotted.Config{MaxRetries: 2, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
			DisableCoalescing: true}, logger.Info)
		release = holdLock(t, db, ref)
		err = slotted.Increment(w, &Tag{Name: tag.Name}, "uses")
		release()
		require.Error(t, err)
		assert.Equal(t, 2, strings.Count(info.String(), "slotted: retrying after a lock conflict"), info.String())
		assert.Equal(t, 3, conflictLines(info.String()), "two retries at Info, the final error:\n%s", info.String())
	})
}
