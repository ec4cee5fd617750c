package tests

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// BenchmarkCoalescePaired compares, in one run and as ratios, four ways to count at 1, 8, 64 and 256
// writers on one hot record and on 1000 records:
//   - coalesced:  slotted.Increment with coalescing (the default);
//   - per-op:     slotted.Increment with DisableCoalescing (one upsert per call, as before);
//   - single-row: UPDATE bench_posts SET plain = plain + 1 WHERE id = ?, prepared;
//   - redis:      go-redis INCR on one key per record (Redis at $SLOTTED_REDIS_ADDR, default 127.0.0.1:6379),
//     built only with -tags redis (bench_redis_test.go), so that go-redis stays out of a default go test.
//
// The sides alternate in windows of SLOTTED_BENCH_WINDOW_MS (default 1000) for SLOTTED_BENCH_ROUNDS rounds
// (default 5), in a new random order every round, so drift on a shared machine falls on all of them. It
// reports the median ops/s of each side, the median of the per-round ratios (with their min and max), and
// allocations per operation of the two plugin sides. With one writer the sides instead take turns call by
// call within each window and a side's rate is 1 / its median call time (see interleaved). Both plugin
// sides run on one connection pool of at most 64 connections; every total is checked afterwards. Ignores
// b.N: run with -benchtime 1x. SLOTTED_BENCH_INFLIGHT=2,4 adds coalesced sides with those MaxInFlight.
//
//	go test -run '^$' -bench 'CoalescePaired' -benchtime 1x -timeout 60m ./tests
//	go test -run '^$' -bench 'CoalescePaired/mysql/w=64/' -benchtime 1x ./tests
func BenchmarkCoalescePaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 5)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	rdb := benchRedis(b)
	for _, name := range dbNames(b) {
		b.Run(name, func(b *testing.B) {
			env := newCoalesceBench(b, name)
			for _, workers := range []int{1, 8, 64, 256} {
				for _, records := range []int{1, 1000} {
					b.Run(fmt.Sprintf("w=%d/records=%d", workers, records), func(b *testing.B) {
						env.run(b, rdb, workers, records, rounds, window)
					})
				}
			}
		})
	}
}

type coalesceBench struct {
	name             string
	coalesced, perOp *gorm.DB
	inFlight         map[int]*gorm.DB // extra coalesced sides with other MaxInFlight values (SLOTTED_BENCH_INFLIGHT=2,4)
	sqlDB            *sql.DB
	single           *sql.Stmt
	want             map[string]int64 // per side: increments made, checked against the counters
}

func newCoalesceBench(b *testing.B, name string) *coalesceBench {
	base := openRaw(b, name)
	base.Config.Logger = logger.Discard
	sqlDB, err := base.DB()
	if err != nil {
		b.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(64)
	sqlDB.SetMaxIdleConns(64)
	if err := base.Migrator().DropTable(&BenchPost{}, benchTable, benchTable+"_perop"); err != nil {
		b.Fatal(err)
	}
	if err := base.AutoMigrate(&BenchPost{}); err != nil {
		b.Fatal(err)
	}
	posts := make([]BenchPost, 1000)
	if err := base.CreateInBatches(&posts, 500).Error; err != nil {
		b.Fatal(err)
	}
	env := &coalesceBench{name: name, sqlDB: sqlDB, want: map[string]int64{}}
	// Two plugins on the same pool, each with a counter table of its own so their totals can be checked.
	env.coalesced = sharedPool(b, name, sqlDB, slotted.Config{Table: benchTable})
	env.perOp = sharedPool(b, name, sqlDB, slotted.Config{Table: benchTable + "_perop", DisableCoalescing: true})
	env.inFlight = map[int]*gorm.DB{}
	for _, f := range strings.Split(os.Getenv("SLOTTED_BENCH_INFLIGHT"), ",") {
		if n, err := strconv.Atoi(f); err == nil && n >= 1 {
			table := fmt.Sprintf("%s_d%d", benchTable, n)
			if err := base.Migrator().DropTable(table); err != nil {
				b.Fatal(err)
			}
			env.inFlight[n] = sharedPool(b, name, sqlDB, slotted.Config{Table: table, MaxInFlight: n})
		}
	}
	if env.single, err = sqlDB.Prepare(singleRowUpdate(name)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.single.Close(); env.check(b) })
	return env
}

// sharedPool opens gorm (a fresh Config, as gorm requires) on an existing pool and registers a plugin.
func sharedPool(b *testing.B, name string, pool *sql.DB, cfg slotted.Config) *gorm.DB {
	var d gorm.Dialector
	switch name {
	case dbMySQL:
		d = mysql.New(mysql.Config{Conn: pool, SkipInitializeWithVersion: true})
	case dbPostgres:
		d = postgres.New(postgres.Config{Conn: pool})
	default:
		d = sqliteOn(pool)
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Use(slotted.New(cfg)); err != nil {
		b.Fatal(err)
	}
	return db
}

// redisIncr is the Redis side of BenchmarkCoalescePaired: what users pick
// instead of a counter in the database.
type redisIncr interface {
	incr(key string) error
	del(keys ...string) error
}

// side is one contender: an operation on a record (1-based post id).
type side struct {
	name string
	op   func(id uint) error
}

func (env *coalesceBench) run(b *testing.B, rdb redisIncr, workers, records, rounds int, window time.Duration) {
	prefix := fmt.Sprintf("slotted-bench:%d:", time.Now().UnixNano())
	sides := []side{
		{"coalesced", func(id uint) error { p := BenchPost{ID: id}; return slotted.Increment(env.coalesced, &p, "likes") }},
		{"per-op", func(id uint) error { p := BenchPost{ID: id}; return slotted.Increment(env.perOp, &p, "likes") }},
		{"single-row", func(id uint) error { _, err := env.single.Exec(id); return err }},
	}
	for _, n := range slices.Sorted(maps.Keys(env.inFlight)) {
		db := env.inFlight[n]
		sides = append(sides, side{fmt.Sprintf("coalesced-d%d", n), func(id uint) error { p := BenchPost{ID: id}; return slotted.Increment(db, &p, "likes") }})
	}
	if rdb != nil {
		sides = append(sides, side{"redis", func(id uint) error {
			return rdb.incr(prefix + strconv.FormatUint(uint64(id), 10))
		}})
	}
	before, err := slotted.StatsOf(env.coalesced)
	if err != nil {
		b.Fatal(err)
	}
	rates := make(map[string][]float64, len(sides))
	allocs := make(map[string][]float64, len(sides))
	for r := 0; r < rounds; r++ {
		if workers == 1 {
			// One writer: the sides take turns operation by operation, so drift cannot favour either.
			for _, m := range interleaved(b, window*time.Duration(len(sides)), sides, records) {
				rates[m.name] = append(rates[m.name], m.rate)
				allocs[m.name] = append(allocs[m.name], m.allocs)
				env.want[m.name] += m.ops
			}
			continue
		}
		for _, i := range rand.Perm(len(sides)) {
			s := sides[i]
			ops, rate, perOp := measure(b, window, workers, func() error { return s.op(uint(1 + rand.IntN(records))) })
			rates[s.name] = append(rates[s.name], rate)
			allocs[s.name] = append(allocs[s.name], perOp)
			env.want[s.name] += ops
		}
	}
	ratio := func(a, c string) []float64 {
		out := make([]float64, rounds)
		for r := range out {
			out[r] = rates[a][r] / rates[c][r]
		}
		return out
	}
	for _, s := range sides {
		b.ReportMetric(median(rates[s.name]), s.name+"-ops/s")
	}
	for _, s := range sides[3:] {
		if s.name != "redis" {
			b.ReportMetric(median(ratio(s.name, "per-op")), s.name+"/per-op")
		}
	}
	for _, c := range []string{"per-op", "single-row", "redis"} {
		if _, ok := rates[c]; !ok {
			continue
		}
		rs := ratio("coalesced", c)
		b.ReportMetric(median(rs), "coalesced/"+c)
		if c == "per-op" {
			b.ReportMetric(slices.Min(rs), "min-coalesced/per-op")
			b.ReportMetric(slices.Max(rs), "max-coalesced/per-op")
		}
	}
	after, err := slotted.StatsOf(env.coalesced)
	if err != nil {
		b.Fatal(err)
	}
	if n := after.Batches - before.Batches; n > 0 {
		b.ReportMetric(float64(after.BatchedWrites-before.BatchedWrites)/float64(n), "writes/batch")
	}
	b.ReportMetric(median(allocs["coalesced"]), "coalesced-allocs/op")
	b.ReportMetric(median(allocs["per-op"]), "per-op-allocs/op")
	if rdb != nil {
		if err := rdb.del(keys(prefix, records)...); err != nil {
			b.Error(err)
		}
	}
}

func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// measure runs fn from workers goroutines for d. It returns the calls completed, their rate, and heap
// allocations per call (of the whole process while it ran: the plugin, the driver, the benchmark loop).
func measure(b *testing.B, d time.Duration, workers int, fn func() error) (ops int64, rate, allocsPerOp float64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := fn(); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	ops = done.Load()
	if ops > 0 {
		allocsPerOp = float64(after.Mallocs-before.Mallocs) / float64(ops)
	}
	return ops, float64(ops) / elapsed.Seconds(), allocsPerOp
}

type sideResult struct {
	name   string
	ops    int64
	rate   float64 // 1 / median call time
	allocs float64
}

// interleaved runs one writer for d, calling each side in turn (in a new random order every turn) and timing
// every call. A side's rate is 1 / its median call time: one stall (a checkpoint, a GC pause, another
// process's fsync) lands on one side's call only and would swing a mean. Allocations are counted apart,
// with testing.AllocsPerRun, as reading them per call would stop the world between calls.
func interleaved(b *testing.B, d time.Duration, sides []side, records int) []sideResult {
	out := make([]sideResult, len(sides))
	lat := make([][]time.Duration, len(sides))
	for i, s := range sides {
		out[i].name = s.name
		out[i].allocs = testing.AllocsPerRun(50, func() {
			if err := s.op(uint(1 + rand.IntN(records))); err != nil {
				b.Fatal(err)
			}
		})
		out[i].ops += 51 // AllocsPerRun runs it once more to warm up
	}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		// A fresh order every turn: in a fixed cycle each side would always follow the same other side
		// (a SQLite call right after a Redis round trip measured 25% slower).
		for _, i := range rand.Perm(len(sides)) {
			id := uint(1 + rand.IntN(records))
			start := time.Now()
			if err := sides[i].op(id); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(start))
			out[i].ops++
		}
	}
	for i := range out {
		slices.Sort(lat[i])
		out[i].rate = 1 / lat[i][len(lat[i])/2].Seconds()
	}
	return out
}

// check compares each plugin side's counter table with the increments it made: exact.
func (env *coalesceBench) check(b *testing.B) {
	type plugin struct {
		db   *gorm.DB
		side string
	}
	plugins := []plugin{{env.coalesced, "coalesced"}, {env.perOp, "per-op"}}
	for n, db := range env.inFlight {
		plugins = append(plugins, plugin{db, fmt.Sprintf("coalesced-d%d", n)})
	}
	for _, c := range plugins {
		var total int64
		// Outcome markers (on by default on the servers) are rows of the table too: not increments.
		if err := slotted.Table(c.db).Select("COALESCE(SUM(count), 0)").Where("record_type <> ?", slotted.MarkerType).Scan(&total).Error; err != nil {
			b.Error(err)
			continue
		}
		if total != env.want[c.side] {
			b.Errorf("%s: counter total %d, increments made %d", c.side, total, env.want[c.side])
		}
	}
}
