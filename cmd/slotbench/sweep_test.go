package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
)

// testDB is a database the sweep tests run on: a temporary SQLite file
// always, MariaDB/MySQL and PostgreSQL when SLOTTED_MYSQL_DSN /
// SLOTTED_POSTGRES_DSN are set. The root package's tests use the same
// servers at the same time, so these tests only create and drop tables with
// random names of their own.
type testDB struct{ name, dsn string }

func testDBs(t *testing.T) []testDB {
	dbs := []testDB{{dialectSQLite, ""}}
	for _, e := range []struct{ name, env string }{{dialectMySQL, "SLOTTED_MYSQL_DSN"}, {dialectPostgres, "SLOTTED_POSTGRES_DSN"}} {
		if dsn := os.Getenv(e.env); dsn != "" {
			dbs = append(dbs, testDB{e.name, dsn})
		} else if os.Getenv("SLOTTED_REQUIRE_DBS") == "1" {
			t.Fatalf("SLOTTED_REQUIRE_DBS=1 but %s is not set", e.env)
		}
	}
	return dbs
}

// dsnFor gives SQLite a file of the test's own, so other tables can be put
// beside the sweep's before it runs.
func (d testDB) dsnFor(t *testing.T) string {
	if d.name == dialectSQLite {
		return filepath.Join(t.TempDir(), "bench.db")
	}
	return d.dsn
}

func tinyOptions(driver, dsn string) Options {
	return Options{Driver: driver, DSN: dsn, Slots: []int{1, 2}, Workers: []int{1, 2}, Duration: 100 * time.Millisecond,
		Repeat: 2, Expect: 2, MaxOps: defaultMaxOps, Retries: 5, Quiet: true}
}

func openTest(t *testing.T, tg *target) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(tg.dialector(), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	t.Cleanup(func() { closeDB(db) })
	return db
}

// tablesWithPrefix lists the tables of the current database/schema whose
// names start with prefix.
func tablesWithPrefix(t *testing.T, db *gorm.DB, prefix string) []string {
	t.Helper()
	all, err := db.Migrator().GetTables()
	require.NoError(t, err)
	var out []string
	for _, n := range all {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// keepTable creates a table the sweep must leave alone, with one row.
func keepTable(t *testing.T, db *gorm.DB) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "slotbenchtest_" + hex.EncodeToString(b) + "_keep"
	require.NoError(t, db.Exec("CREATE TABLE ? (id BIGINT NOT NULL PRIMARY KEY, v BIGINT NOT NULL)", clause.Table{Name: name}).Error)
	require.NoError(t, db.Exec("INSERT INTO ? (id, v) VALUES (1, 42)", clause.Table{Name: name}).Error)
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS ?", clause.Table{Name: name}) })
	return name
}

func assertKept(t *testing.T, db *gorm.DB, name string) {
	t.Helper()
	var v int64
	require.NoError(t, db.Raw("SELECT v FROM ? WHERE id = 1", clause.Table{Name: name}).Scan(&v).Error)
	assert.Equal(t, int64(42), v, "a table that is not the sweep's is untouched")
}

func TestSweepDropsItsTables(t *testing.T) {
	for _, d := range testDBs(t) {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			s, err := newSweep(tinyOptions(d.name, d.dsnFor(t)))
			require.NoError(t, err)
			defer s.close()
			db := openTest(t, s.target)
			keep := keepTable(t, db)

			var during []string
			var order []cellKey
			s.progress = func(p progress) {
				if p.Done == 1 {
					during = tablesWithPrefix(t, db, s.prefix)
				}
				order = append(order, cellKey{p.Cell.Workers, p.Cell.Slots})
				assert.Equal(t, 12, p.Total)
				assert.Equal(t, (p.Done+5)/6, p.Round)
				assert.Len(t, p.Cell.Runs, p.Round, "the cell so far")
				assert.GreaterOrEqual(t, p.ETA, time.Duration(0))
			}
			res, err := s.Run(context.Background())
			require.NoError(t, err)

			assert.ElementsMatch(t, []string{s.prefix + "counters", s.prefix + "rows"}, during, "the scratch tables existed during the sweep")
			assert.Empty(t, tablesWithPrefix(t, db, s.prefix), "and are gone afterwards")
			assertKept(t, db, keep)

			assert.Equal(t, d.name, res.Database.Dialect)
			assert.NotEmpty(t, res.Database.Version)
			assert.False(t, res.Interrupted)
			forwards := []cellKey{{1, 0}, {1, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}}
			backwards := slices.Clone(forwards)
			slices.Reverse(backwards)
			assert.Equal(t, append(forwards, backwards...), order, "rounds alternate direction")
			require.Len(t, res.Cells, 6)
			for i, c := range res.Cells {
				assert.Equal(t, []int{1, 1, 1, 2, 2, 2}[i], c.Workers)
				assert.Equal(t, []int{0, 1, 2, 0, 1, 2}[i], c.Slots)
				require.Len(t, c.Runs, 2)
				for j, r := range c.Runs {
					assert.Equal(t, j+1, r.Round)
					assert.True(t, r.Exact, "cell %d run %d: total %d, ops %d", i, j, r.Total, r.Ops)
					assert.Positive(t, r.Ops)
				}
				assert.True(t, c.Exact)
				assert.Equal(t, c.Runs[0].Ops+c.Runs[1].Ops, c.Ops)
				assert.Positive(t, c.OpsPerSec)
				assert.LessOrEqual(t, c.Low, c.OpsPerSec)
				assert.GreaterOrEqual(t, c.High, c.OpsPerSec)
				assert.Zero(t, c.Errors.Other, c.Errors.FirstOther)
				assert.Positive(t, c.P99Ms)
				assert.GreaterOrEqual(t, c.P99Ms, c.P50Ms)
				assert.Equal(t, "duration", c.StoppedBy)
				switch d.name {
				case dialectMySQL:
					assert.NotNil(t, c.Evidence.InnoDB)
				case dialectPostgres:
					require.NotNil(t, c.Evidence.Postgres)
					assert.Positive(t, c.Evidence.Postgres.Samples)
				default:
					assert.NotNil(t, c.Evidence.SQLite)
				}
			}
			assert.Equal(t, 2, res.Recommendation.Workers)
			assert.NotEmpty(t, res.Recommendation.Verdict)
			assert.NotEmpty(t, res.Recommendation.Summary)
			if d.name == dialectSQLite {
				assert.Equal(t, verdictSQLite, res.Recommendation.Verdict)
			}
		})
	}
}

func TestSweepMaxOps(t *testing.T) {
	o := tinyOptions("", filepath.Join(t.TempDir(), "bench.db"))
	o.Workers, o.Slots, o.MaxOps, o.Duration = []int{2}, []int{4}, 25, time.Minute
	s, err := newSweep(o)
	require.NoError(t, err)
	start := time.Now()
	res, err := s.Run(context.Background())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Second, "the op bound stops a cell long before -duration")
	for _, c := range res.Cells {
		assert.Equal(t, "max-ops", c.StoppedBy)
		for _, r := range c.Runs {
			assert.Equal(t, int64(25), r.Ops)
			assert.Equal(t, "max-ops", r.StoppedBy)
		}
		assert.Equal(t, int64(50), c.Ops)
		assert.True(t, c.Exact)
	}
}

// TestSweepInterrupted simulates Ctrl-C: the context ends in the middle of a
// cell's load, or between cells. The sweep stops and still drops its tables.
func TestSweepInterrupted(t *testing.T) {
	for _, d := range testDBs(t) {
		for _, when := range []string{"mid-cell", "between cells"} {
			t.Run(d.name+"/"+when, func(t *testing.T) {
				t.Parallel()
				s, err := newSweep(tinyOptions(d.name, d.dsnFor(t)))
				require.NoError(t, err)
				defer s.close()
				db := openTest(t, s.target)
				keep := keepTable(t, db)

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				s.opts.Duration = 80 * time.Millisecond
				var existed []string
				if when == "mid-cell" {
					// The baseline cell runs briefly; the plugin's cell after it
					// would run 10 s, and is interrupted 50 ms into its load.
					s.onLoad = func(workers, slots, round int) {
						if slots == 1 {
							s.opts.Duration = 10 * time.Second
							existed = tablesWithPrefix(t, db, s.prefix)
							time.AfterFunc(50*time.Millisecond, cancel)
						}
					}
				} else {
					s.progress = func(progress) {
						existed = tablesWithPrefix(t, db, s.prefix)
						cancel()
					}
				}
				start := time.Now()
				res, err := s.Run(ctx)
				require.ErrorIs(t, err, context.Canceled)
				assert.Less(t, time.Since(start), 8*time.Second, "the interrupt stopped the cell")
				assert.True(t, res.Interrupted)
				assert.Len(t, res.Cells, 1, "the cell finished before the interrupt is kept")
				assert.Len(t, existed, 2, "the tables existed when the interrupt came")
				assert.Empty(t, tablesWithPrefix(t, db, s.prefix), "dropped after the interrupt")
				assertKept(t, db, keep)
			})
		}
	}
}

// TestRunSignal sends the process a real SIGINT while run sweeps a SQLite
// file, and checks that run reports the interrupt (status 130) and the
// scratch tables are gone. Not parallel: the signal goes to the whole process.
func TestRunSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.db")
	tg, err := newTarget("sqlite", path)
	require.NoError(t, err)
	db := openTest(t, tg)
	keep := keepTable(t, db)

	var stdout strings.Builder
	stderr := &syncBuilder{}
	status := make(chan int, 1)
	go func() {
		status <- run([]string{"-dsn", path, "-slots", "1", "-workers", "1", "-duration", "10s", "-svg", ""}, &stdout, stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(tablesWithPrefix(t, db, "slotbench_")) < 2 {
		require.True(t, time.Now().Before(deadline), "the sweep never created its tables: %s", stderr.String())
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case code := <-status:
		assert.Equal(t, 130, code, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after SIGINT")
	}
	assert.Contains(t, stderr.String(), "interrupted; dropping the scratch tables")
	assert.Empty(t, tablesWithPrefix(t, db, "slotbench_"))
	assertKept(t, db, keep)
}

// TestRunOutputs runs the command end to end on SQLite: table, JSON and chart.
func TestRunOutputs(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "out.svg")
	var stdout, stderr strings.Builder
	args := []string{"-dsn", filepath.Join(dir, "bench.db"), "-slots", "1,2", "-workers", "1,2", "-duration", "50ms", "-svg", svg,
		"-expect", "3", "-repeat", "2"}
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "single-row")
	assert.Contains(t, stdout.String(), "× 2 runs of 0.05s, interleaved")
	assert.Contains(t, stdout.String(), "No: SQLite lets one writer in at a time")
	assert.Contains(t, stderr.String(), "-expect 3 was not measured; recommending for the nearest -workers value, 2")
	assert.Contains(t, stderr.String(), "[12/12] round 2")
	ids, classes, _ := svgElements(t, svg)
	assert.Contains(t, ids, "series-w2")
	assert.Equal(t, 2, classes["baseline"])

	stdout.Reset()
	stderr.Reset()
	args = append(args, "-json", "-quiet", "-svg", "")
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	assert.NotContains(t, stderr.String(), "[ 1/12]", "-quiet: no progress")
	assert.True(t, strings.HasPrefix(stdout.String(), "{"), stdout.String())
	assert.Contains(t, stdout.String(), fmt.Sprintf(`"dialect": %q`, dialectSQLite))
}

// syncBuilder is a strings.Builder safe to read while run writes to it.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMeasureRetriesConnecting: a run that cannot open its connections (a
// shared server's max_connections taken for a moment) is run again after a
// pause; any other error, or the last try, ends the sweep.
func TestMeasureRetriesConnecting(t *testing.T) {
	s, err := newSweep(tinyOptions("sqlite", filepath.Join(t.TempDir(), "bench.db")))
	require.NoError(t, err)
	s.connectPause = 20 * time.Millisecond
	var notices []string
	s.notice = func(msg string) { notices = append(notices, msg) }
	tries := 0
	refused := fmt.Errorf("%w: opening connection 62 of 64: too many clients", errConnect)
	s.runOne = func(ctx context.Context, workers, slots, round int) (*measured, error) {
		tries++
		if tries < 3 {
			return nil, refused
		}
		return &measured{sample: Sample{Round: round}}, nil
	}
	start := time.Now()
	m, err := s.measure(context.Background(), cellKey{64, 8}, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, m.sample.Round)
	assert.Equal(t, 3, tries)
	assert.GreaterOrEqual(t, time.Since(start), 3*s.connectPause, "paused 1x and 2x the pause")
	require.Len(t, notices, 2)
	assert.Contains(t, notices[0], "64 workers, 8 slots (round 2): connecting: opening connection 62 of 64: too many clients; trying again in 20ms")

	tries = 0
	s.runOne = func(context.Context, int, int, int) (*measured, error) {
		tries++
		return nil, errors.New("syntax error")
	}
	_, err = s.measure(context.Background(), cellKey{1, 0}, 1)
	require.EqualError(t, err, "syntax error")
	assert.Equal(t, 1, tries, "only connecting is tried again")

	ctx, cancel := context.WithCancel(context.Background())
	tries = 0
	s.runOne = func(context.Context, int, int, int) (*measured, error) { tries++; cancel(); return nil, refused }
	_, err = s.measure(ctx, cellKey{1, 0}, 1)
	require.ErrorIs(t, err, errConnect)
	assert.Equal(t, 1, tries, "an interrupt is not waited out")
}
