package tests

import (
	"context"
	"database/sql"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gmysql "gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// freezer is a TCP proxy on loopback in front of a database server that can
// stop forwarding bytes in both directions while keeping every connection
// open: a server that stalls (a frozen VM, a full disk, a network partition
// without resets), as the client sees it.
type freezer struct {
	ln     net.Listener
	target string
	held   atomic.Int64 // bytes that arrived while frozen

	mu    sync.Mutex
	gate  chan struct{} // non-nil while frozen; closed by thaw
	conns []net.Conn
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &freezer{ln: ln, target: target}
	go f.serve()
	t.Cleanup(func() {
		f.thaw()
		_ = ln.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.conns {
			_ = c.Close()
		}
	})
	return f
}

func (f *freezer) addr() string { return f.ln.Addr().String() }

func (f *freezer) serve() {
	for {
		client, err := f.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", f.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, client, server)
		f.mu.Unlock()
		go f.pipe(client, server)
		go f.pipe(server, client)
	}
}

// pipe copies src to dst, holding every chunk that arrives while frozen until thaw.
func (f *freezer) pipe(src, dst net.Conn) {
	defer func() { _ = src.Close(); _ = dst.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f.mu.Lock()
			gate := f.gate
			f.mu.Unlock()
			if gate != nil {
				f.held.Add(int64(n))
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate == nil {
		f.gate = make(chan struct{})
		f.held.Store(0)
	}
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate != nil {
		close(f.gate)
		f.gate = nil
	}
}

// stallable opens a pool on the test's database with the plugin registered,
// and returns functions that stall it and end the stall, and one that reports
// whether a caller is stuck in the stall. On the servers the pool connects
// through a freezer; SQLite has no server to stall, so there the pool's only
// connection is held by someone else: callers wait for a connection instead.
func stallable(t *testing.T, db *gorm.DB) (stalled *gorm.DB, stall, resume func(), stuck func() bool) {
	return stallableWith(t, db, slotted.Config{})
}

// stallableWith is stallable with the plugin registered under cfg.
func stallableWith(t *testing.T, db *gorm.DB, cfg slotted.Config) (stalled *gorm.DB, stall, resume func(), stuck func() bool) {
	t.Helper()
	name := dialect(db)
	var d gorm.Dialector
	switch name {
	case dbMySQL:
		cfg, err := mysql.ParseDSN(os.Getenv("SLOTTED_MYSQL_DSN"))
		require.NoError(t, err)
		f := newFreezer(t, cfg.Addr)
		cfg.Addr = f.addr()
		d = gmysql.Open(cfg.FormatDSN())
		stall, resume, stuck = f.freeze, f.thaw, func() bool { return f.held.Load() > 0 }
	case dbPostgres:
		dsn := os.Getenv("SLOTTED_POSTGRES_DSN")
		cfg, err := pgconn.ParseConfig(dsn)
		require.NoError(t, err)
		f := newFreezer(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
		host, port, _ := net.SplitHostPort(f.addr())
		d = postgres.Open(dsn + " host=" + host + " port=" + port) // later keywords win
		stall, resume, stuck = f.freeze, f.thaw, func() bool { return f.held.Load() > 0 }
	}
	if d != nil {
		var err error
		stalled, err = gorm.Open(d, &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		t.Cleanup(func() {
			if sqlDB, err := stalled.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
	} else {
		stalled = openRaw(t, name)
		sqlDB, err := stalled.DB()
		require.NoError(t, err)
		sqlDB.SetMaxOpenConns(1)
		var held *sql.Conn
		stall = func() {
			held, err = sqlDB.Conn(context.Background())
			require.NoError(t, err)
		}
		resume = func() {
			if held != nil {
				_ = held.Close()
				held = nil
			}
		}
		stuck = func() bool { return sqlDB.Stats().WaitCount > 0 }
		t.Cleanup(resume)
	}
	require.NoError(t, stalled.Use(slotted.New(cfg)))
	return stalled, stall, resume, stuck
}

// TestDeadlinesOnFirstUse: the first statements on a fresh pool, while the
// server stalls. One caller with a long deadline gets there first; 48 callers
// with short deadlines follow. Every one of them must give up with its own
// context.DeadlineExceeded while the stall still lasts, not queue behind the
// first caller's network round trip.
func TestDeadlinesOnFirstUse(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		stalled, stall, resume, stuck := stallable(t, db)
		post := Post{ID: 7}

		stall()
		var resumed atomic.Bool
		endStall := sync.OnceFunc(func() { resumed.Store(true); resume() })
		t.Cleanup(endStall)

		first := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p := post
			first <- slotted.Increment(stalled.WithContext(ctx), &p, "likes")
		}()
		for start := time.Now(); !stuck(); time.Sleep(5 * time.Millisecond) {
			require.Less(t, time.Since(start), 10*time.Second, "the first caller never reached the stalled server")
		}

		const callers = 48
		results := make(chan stallResult, callers)
		for i := range callers {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				var err error
				p := post
				if i%2 == 0 {
					err = slotted.Increment(stalled.WithContext(ctx), &p, "likes")
				} else {
					_, err = slotted.Count(stalled.WithContext(ctx), &p, "likes")
				}
				results <- stallResult{err, resumed.Load()}
			}()
		}
		requireDeadlinesDuringStall(t, results, callers, 20*time.Second, endStall)
		require.NoError(t, <-first, "the patient caller succeeded once the server answered")
		n, err := slotted.Count(stalled, &post, "likes")
		require.NoError(t, err)
		assert.GreaterOrEqual(t, n, int64(1))
	})
}

// TestDeadlinesInAStalledBatch: what stalls is a coalesced statement carrying
// many callers' writes. The first statement is held at a gate while 24
// callers with 2 s deadlines queue behind it, the server stalls, and the
// first statement then fails without reaching it: the oldest queued caller
// leads the other 23 into the stalled server. Each must still return with its
// own context.DeadlineExceeded during the stall (before, a caller whose write
// was in a statement waited for it: until the stall ended or BatchTimeout),
// and the statement, which outlives them, lands once the server answers.
func TestDeadlinesInAStalledBatch(t *testing.T) {
	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		// Without outcome markers: statement 1 fails with an injected error, which a marker
		// would settle by reading the stalled server (holding the statement slot until it
		// answers); settling is TestWriteErrorsMeanNotCounted's, this test is the deadlines'.
		stalled, stall, resume, _ := stallableWith(t, db, slotted.Config{DisableOutcomeMarkers: true})
		started, release := make(chan struct{}), make(chan struct{})
		installGate(t, stalled, func(n int32, tx *gorm.DB) {
			if n == 1 {
				close(started)
				<-release
				_ = tx.AddError(errInjected) // statement 1 never reaches the server
			}
		})
		post := Post{ID: 9}
		first := make(chan error, 1)
		go func() { p := post; first <- slotted.Increment(stalled, &p, "likes") }()
		<-started

		var resumed atomic.Bool
		endStall := sync.OnceFunc(func() { resumed.Store(true); resume() })
		t.Cleanup(endStall)
		const callers = 24
		results := make(chan stallResult, callers)
		for range callers {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				p := post
				err := slotted.Increment(stalled.WithContext(ctx), &p, "likes")
				results <- stallResult{err, resumed.Load()}
			}()
		}
		waitQueued(t, stalled, callers)
		stall()
		close(release)
		require.ErrorIs(t, <-first, errInjected)

		var st slotted.Stats
		requireDeadlinesDuringStall(t, results, callers, 15*time.Second, func() { st = stats(t, stalled); endStall() })
		assert.EqualValues(t, 2, st.Batches, "statement 1, then one batch of all %d callers", callers)
		assert.EqualValues(t, 1+callers, st.BatchedWrites)
		// The batch outlived its callers' deadlines: it lands when the server answers.
		require.Eventually(t, func() bool {
			n, err := slotted.Count(stalled, &post, "likes")
			return err == nil && n == callers
		}, 20*time.Second, 20*time.Millisecond)
	})
}

// stallResult is a short-deadline caller's outcome, and whether the stall
// had ended when it returned.
type stallResult struct {
	err        error
	afterStall bool
}

// requireDeadlinesDuringStall collects n callers' results until every one
// returned or bound passed (then it logs where the stuck ones wait, rather
// than hang), ends the stall, collects the rest, and asserts that each
// returned its own context.DeadlineExceeded while the stall lasted.
func requireDeadlinesDuringStall(t *testing.T, results <-chan stallResult, n int, bound time.Duration, endStall func()) {
	t.Helper()
	var got []stallResult
	deadline := time.After(bound)
collect:
	for len(got) < n {
		select {
		case r := <-results:
			got = append(got, r)
		case <-deadline:
			stacks := make([]byte, 1<<20)
			t.Logf("%d of %d callers still stuck; goroutines:\n%s", n-len(got), n, stacks[:runtime.Stack(stacks, true)])
			break collect
		}
	}
	endStall()
	for len(got) < n {
		got = append(got, <-results)
	}
	for i, r := range got {
		assert.ErrorIs(t, r.err, context.DeadlineExceeded, "caller %d", i)
		assert.False(t, r.afterStall, "caller %d returned only after the stall ended", i)
	}
}
