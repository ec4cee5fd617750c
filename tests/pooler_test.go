package tests

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// The pooler suite runs through PgBouncer started by scripts/pgbouncer.sh:
//
//	scripts/pgbouncer.sh start && eval "$(scripts/pgbouncer.sh env)"  # SLOTTED_PGBOUNCER_TX_DSN, SLOTTED_PGBOUNCER_SESSION_DSN
//
// Without the DSNs the tests are skipped; SLOTTED_REQUIRE_POOLER=1 makes a
// missing DSN a failure instead.

func poolerEnv(t testing.TB, key string) string {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		if os.Getenv("SLOTTED_REQUIRE_POOLER") == "1" {
			t.Fatalf("SLOTTED_REQUIRE_POOLER=1 but %s is not set", key)
		}
		t.Skipf("%s not set (see scripts/pgbouncer.sh)", key)
	}
	return v
}

// poolerMode is how an app instance talks to the pooler.
type poolerMode int

const (
	simpleProtocol poolerMode = iota // postgres.Config{PreferSimpleProtocol: true}: detected by db.Use
	execModeDSN                      // default_query_exec_mode=exec in the DSN: detected by db.Use
	ownPgxPool                       // the user's own *sql.DB on the simple protocol: not detected, Config.DisablePrepared
	preparedPath                     // pgx's defaults (session mode only)
)

// openPooled opens one app instance (a gorm pool of at most 8 connections)
// on the pooler, the plugin registered on it.
func openPooled(t testing.TB, dsn string, mode poolerMode) *gorm.DB {
	t.Helper()
	var d gorm.Dialector
	switch mode {
	case simpleProtocol:
		d = postgres.New(postgres.Config{DSN: dsn, PreferSimpleProtocol: true})
	case execModeDSN:
		d = postgres.Open(dsn + " default_query_exec_mode=exec")
	case ownPgxPool:
		cc, err := pgx.ParseConfig(dsn)
		require.NoError(t, err)
		cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		d = postgres.New(postgres.Config{Conn: stdlib.OpenDB(*cc)})
	default:
		d = postgres.Open(dsn)
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(8)
	t.Cleanup(func() { _ = sqlDB.Close() })
	require.NoError(t, db.Use(slotted.New(slotted.Config{DisablePrepared: mode == ownPgxPool})))
	return db
}

// freshPooled drops and recreates the test tables through dsn (the pooler's
// database), then returns an instance like openPooled's.
func freshPooled(t testing.TB, dsn string, mode poolerMode) *gorm.DB {
	t.Helper()
	setup, err := gorm.Open(postgres.New(postgres.Config{DSN: dsn, PreferSimpleProtocol: true}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, setup.Migrator().DropTable(append(testModels, slotted.DefaultTable, slotted.DefaultOnceTable)...))
	require.NoError(t, setup.Use(slotted.New(slotted.Config{})))
	require.NoError(t, setup.AutoMigrate(testModels...))
	sqlDB, _ := setup.DB()
	_ = sqlDB.Close()
	return openPooled(t, dsn, mode)
}

// poolerProbe is the probe: goroutines of mixed traffic (Increment,
// Add, Count, a Buffer's adds and flushes, AddOnce and its replay, Compact)
// on one post, through one app instance. It returns the calls that failed
// and what each counter must hold afterwards for this instance's share.
func poolerProbe(t *testing.T, db *gorm.DB, postID uint, instance string, goroutines, rounds int) (failures int64, likes, views int64) {
	t.Helper()
	buf, err := slotted.NewBuffer(db, slotted.BufferOptions{Interval: 20 * time.Millisecond})
	require.NoError(t, err)
	var failed atomic.Int64
	fail := func(what string, err error) {
		if err != nil {
			if failed.Add(1) <= 3 {
				t.Errorf("%s %s: %v", instance, what, err)
			}
		}
	}
	run(goroutines, func(w int) error {
		post := Post{ID: postID}
		for i := range rounds {
			fail("Increment", slotted.Increment(db, &post, "likes"))
			fail("Add", slotted.Add(db, &post, "views", 2))
			_, err := slotted.Count(db, &post, "likes")
			fail("Count", err)
			fail("Buffer.Add", buf.Add(&post, "likes", 1))
			key := fmt.Sprintf("%s-%d-%d", instance, w, i)
			applied, err := slotted.AddOnce(db, &post, "likes", 1, key)
			fail("AddOnce", err)
			if err == nil && !applied {
				fail("AddOnce", fmt.Errorf("key %s not applied", key))
			}
			again, err := slotted.AddOnce(db, &post, "likes", 1, key)
			fail("AddOnce replay", err)
			if err == nil && again {
				fail("AddOnce replay", fmt.Errorf("key %s applied twice", key))
			}
			if i%5 == 4 {
				fail("Compact", slotted.Compact(db, &post, "likes"))
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fail("Buffer.Close", buf.Close(ctx))
	n := int64(goroutines * rounds)
	return failed.Load(), 3 * n, 2 * n
}

// requireTotals checks the counters through a fresh read and the slot rows' own sum.
func requireTotals(t *testing.T, db *gorm.DB, postID uint, likes, views int64) {
	t.Helper()
	got, err := slotted.Count(db, &Post{ID: postID}, "likes")
	require.NoError(t, err)
	assert.Equal(t, likes, got, "likes")
	got, err = slotted.Count(db, &Post{ID: postID}, "views")
	require.NoError(t, err)
	assert.Equal(t, views, got, "views")
}

// TestPoolerTransactionMode: two app instances share PgBouncer in transaction
// mode, each with 32 goroutines of mixed traffic; then one "restarts" (a new
// pool after the old one closed) and writes again. Every call succeeds and the
// totals are exact. The three ways an instance can be set up are each covered.
func TestPoolerTransactionMode(t *testing.T) {
	dsn := poolerEnv(t, "SLOTTED_PGBOUNCER_TX_DSN")
	for _, mode := range []struct {
		name string
		mode poolerMode
	}{{"PreferSimpleProtocol", simpleProtocol}, {"ExecModeDSN", execModeDSN}, {"OwnPool", ownPgxPool}} {
		t.Run(mode.name, func(t *testing.T) {
			a := freshPooled(t, dsn, mode.mode)
			b := openPooled(t, dsn, mode.mode)
			p, ok := a.Config.Plugins["slotted"].(*slotted.Plugin)
			require.True(t, ok)
			assert.True(t, p.Config().DisablePrepared, "detected at db.Use, or set")
			post := Post{Title: "pooled"}
			require.NoError(t, a.Create(&post).Error)

			var fa, fb, la, lb, va, vb int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				fb, lb, vb = poolerProbe(t, b, post.ID, "b", 32, 10)
			}()
			fa, la, va = poolerProbe(t, a, post.ID, "a", 32, 10)
			<-done
			t.Logf("%s: failures a=%d b=%d", mode.name, fa, fb)
			assert.Zero(t, fa+fb, "failed calls")
			requireTotals(t, b, post.ID, la+lb, va+vb)

			// Restart: instance a goes away, a new one takes its place.
			sqlDB, _ := a.DB()
			require.NoError(t, sqlDB.Close())
			a2 := openPooled(t, dsn, mode.mode)
			failed := 0
			for range 200 {
				if err := slotted.Increment(a2, &Post{ID: post.ID}, "views"); err != nil {
					failed++
				}
			}
			fr, lr, vr := poolerProbe(t, a2, post.ID, "a2", 32, 5)
			t.Logf("%s: after restart: %d of 200 sequential increments failed, %d probe failures", mode.name, failed, fr)
			assert.Zero(t, failed+int(fr))
			requireTotals(t, a2, post.ID, la+lb+lr, va+vb+vr+200)
		})
	}
}

// TestPoolerSessionMode: session mode keeps a server connection per client,
// so the prepared path works there and stays on; the simple protocol works too.
func TestPoolerSessionMode(t *testing.T) {
	dsn := poolerEnv(t, "SLOTTED_PGBOUNCER_SESSION_DSN")
	for _, mode := range []struct {
		name string
		mode poolerMode
	}{{"Prepared", preparedPath}, {"PreferSimpleProtocol", simpleProtocol}} {
		t.Run(mode.name, func(t *testing.T) {
			a := freshPooled(t, dsn, mode.mode)
			b := openPooled(t, dsn, mode.mode)
			post := Post{Title: "pooled"}
			require.NoError(t, a.Create(&post).Error)
			var fb, lb, vb int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				fb, lb, vb = poolerProbe(t, b, post.ID, "b", 16, 10)
			}()
			fa, la, va := poolerProbe(t, a, post.ID, "a", 16, 10)
			<-done
			assert.Zero(t, fa+fb, "failed calls")
			requireTotals(t, a, post.ID, la+lb, va+vb)
		})
	}
}

// TestPreparedDetection: db.Use turns the plugin's prepared statements off
// when the PostgreSQL dialector prefers the simple protocol or the DSN asks
// for exec or simple_protocol mode, and leaves them on otherwise. Run on the
// direct server (no pooler needed).
func TestPreparedDetection(t *testing.T) {
	dsn := os.Getenv("SLOTTED_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLOTTED_POSTGRES_DSN not set")
	}
	for _, c := range []struct {
		name string
		d    gorm.Dialector
		cfg  slotted.Config
		want bool
	}{
		{"default", postgres.Open(dsn), slotted.Config{}, false},
		{"PreferSimpleProtocol", postgres.New(postgres.Config{DSN: dsn, PreferSimpleProtocol: true}), slotted.Config{}, true},
		{"simple_protocol DSN", postgres.Open(dsn + " default_query_exec_mode=simple_protocol"), slotted.Config{}, true},
		{"exec DSN", postgres.Open(dsn + " default_query_exec_mode=exec"), slotted.Config{}, true},
		{"describe_exec DSN", postgres.Open(dsn + " default_query_exec_mode=describe_exec"), slotted.Config{}, false},
		{"explicit", postgres.Open(dsn), slotted.Config{DisablePrepared: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := gorm.Open(c.d, &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			t.Cleanup(func() {
				if sqlDB, err := db.DB(); err == nil {
					_ = sqlDB.Close()
				}
			})
			p := slotted.New(c.cfg)
			require.NoError(t, db.Use(p))
			assert.Equal(t, c.want, p.Config().DisablePrepared)
		})
	}
}
