package tests

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
	"github.com/slotted-go/slotted/diagnose"
)

// BenchmarkProcsPaired measures what many app instances get: separate OS processes (this test binary run
// again as TestProcsBenchChild), each with its own connection pool and, for the plugin, its own coalescer,
// all writing one hot record. The sides, in a new random order every round, all processes at once:
//   - coalesced:  slotted.Increment with coalescing and its Linger (the defaults), 100 slots;
//   - per-op:     slotted.Increment with DisableCoalescing (one upsert per call), 100 slots;
//   - raw:        the hand-written prepared upsert at a random slot of 100, through database/sql;
//   - single-row: UPDATE bench_posts SET plain = plain + 1 WHERE id = ?, prepared.
//
// SLOTTED_BENCH_PROC_EXTRA adds plugin sides, each "coalesced" followed by options: /s<N> slots,
// /d<N> MaxInFlight, /l<duration> or /loff Linger (e.g. "coalesced/s1,coalesced/loff"). SLOTTED_BENCH_PROC_SHAPES
// lists processes x writers per process (default "2x8,8x8,16x8"). Each process's pool holds
// min(writers, SLOTTED_BENCH_PROC_CONNS/processes) connections (default 72, so that 16 processes stay under
// 80 connections on a PostgreSQL whose max_connections of 100 is shared). Windows of SLOTTED_BENCH_WINDOW_MS (default 1000), SLOTTED_BENCH_ROUNDS rounds
// (default 5); every counter's total is checked exactly afterwards. It reports the median ops/s of each side,
// the median per-round ratios, and a profile of each side (b.Log): mean writes per statement, statements
// (commits) per second, p50/p99 call latency, client CPU per write (all processes, user+system), and lock
// waits (PostgreSQL: backends of this database waiting on a lock in the table, sampled every 100 ms; MariaDB:
// the server-wide Innodb_row_lock_waits/_time deltas). MariaDB and PostgreSQL only: SQLite has one writer.
//
//	SLOTTED_MYSQL_DSN=... SLOTTED_POSTGRES_DSN=... go test -run '^$' -bench 'ProcsPaired' -benchtime 1x -timeout 30m ./tests
func BenchmarkProcsPaired(b *testing.B) {
	rounds := envInt("SLOTTED_BENCH_ROUNDS", 5)
	window := time.Duration(envInt("SLOTTED_BENCH_WINDOW_MS", 1000)) * time.Millisecond
	sides := []string{"coalesced", "per-op", "raw", "single-row"}
	if extra := os.Getenv("SLOTTED_BENCH_PROC_EXTRA"); extra != "" {
		sides = append(sides, strings.Split(extra, ",")...)
	}
	shapes := os.Getenv("SLOTTED_BENCH_PROC_SHAPES")
	if shapes == "" {
		shapes = "2x8,8x8,16x8"
	}
	for _, name := range dbNames(b) {
		if name == dbSQLite {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for _, shape := range strings.Split(shapes, ",") {
				var procs, writers int
				if _, err := fmt.Sscanf(shape, "%dx%d", &procs, &writers); err != nil || procs < 1 || writers < 1 {
					b.Fatalf("SLOTTED_BENCH_PROC_SHAPES: %q is not <processes>x<writers>", shape)
				}
				b.Run(fmt.Sprintf("procs=%d/w=%d", procs, writers), func(b *testing.B) {
					runProcs(b, name, sides, procs, writers, rounds, window)
				})
			}
		})
	}
}

// procSide is one contender as a child process builds it from its spec.
type procSide struct {
	spec  string
	table string // the counter table of a plugin or raw side; "" for single-row
	cfg   slotted.Config
	kind  string // "plugin", "raw", "single-row"
}

// parseProcSide reads a side spec: "single-row", "raw", "per-op", or "coalesced" with /s<N>, /d<N>, /l<duration>.
func parseProcSide(spec string) (procSide, error) {
	s := procSide{spec: spec, kind: "plugin"}
	switch spec {
	case "single-row":
		s.kind = "single-row"
		return s, nil
	case "raw":
		s.kind, s.table = "raw", "bp_raw"
		return s, nil
	case "per-op":
		s.table, s.cfg = "bp_perop", slotted.Config{DisableCoalescing: true}
		return s, nil
	}
	parts := strings.Split(spec, "/")
	if parts[0] != "coalesced" {
		return s, fmt.Errorf("side %q: not single-row, raw, per-op or coalesced[/s<N>][/d<N>][/l<duration>]", spec)
	}
	s.table = "bp_c"
	for _, p := range parts[1:] {
		if p == "" {
			return s, fmt.Errorf("side %q: empty option", spec)
		}
		var err error
		switch p[0] {
		case 's':
			s.cfg.Slots, err = strconv.Atoi(p[1:])
		case 'd':
			s.cfg.MaxInFlight, err = strconv.Atoi(p[1:])
		case 'l':
			err = setLinger(&s.cfg, p[1:])
		default:
			err = fmt.Errorf("unknown option %q", p)
		}
		if err != nil {
			return s, fmt.Errorf("side %q: %w", spec, err)
		}
		s.table += "_" + strings.NewReplacer(".", "_").Replace(p)
	}
	return s, nil
}

// procRun is what one child measured in one window.
type procRun struct {
	Ops      int64   `json:"ops"`
	Seconds  float64 `json:"seconds"`
	P50, P99 float64 // call latency, ms
	CPU      float64 `json:"cpu"` // user+system seconds of the process
	Batches  uint64  `json:"batches"`
	Writes   uint64  `json:"writes"`
	Err      string  `json:"err,omitempty"`
}

const procChildEnv = "SLOTTED_PROCS_CHILD"

type procChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func runProcs(b *testing.B, name string, specs []string, procs, writers, rounds int, window time.Duration) {
	sides := make([]procSide, len(specs))
	for i, spec := range specs {
		s, err := parseProcSide(spec)
		if err != nil {
			b.Fatal(err)
		}
		sides[i] = s
	}
	base := openRaw(b, name)
	base.Config.Logger = logger.Discard
	if sqlDB, err := base.DB(); err == nil {
		sqlDB.SetMaxOpenConns(2)
	}
	tables := []any{&BenchPost{}}
	for _, s := range sides {
		if s.table != "" {
			tables = append(tables, s.table)
		}
	}
	if err := base.Migrator().DropTable(tables...); err != nil {
		b.Fatal(err)
	}
	if err := base.AutoMigrate(&BenchPost{}); err != nil {
		b.Fatal(err)
	}
	if err := base.Create(&BenchPost{ID: 1}).Error; err != nil {
		b.Fatal(err)
	}
	for _, s := range sides {
		if s.table != "" { // the plugin creates its table on db.Use
			db := openRaw(b, name)
			if err := db.Use(slotted.New(slotted.Config{Table: s.table})); err != nil {
				b.Fatal(err)
			}
		}
	}

	pool := max(1, min(writers, envInt("SLOTTED_BENCH_PROC_CONNS", 72)/procs))
	children := startProcChildren(b, name, specs, procs, writers, pool)
	want := map[string]int64{}
	for _, s := range sides { // warm-up: connections opened, statements prepared; counted in the totals
		for _, r := range runProcWindow(b, children, s.spec, 200*time.Millisecond) {
			want[s.spec] += r.Ops
		}
	}

	type profile struct {
		rates                   []float64
		ops, batches, writes    int64
		seconds, cpu            float64
		p50, p99                []float64
		waitSamples, waiting    int64
		rowLockWaits, rowLockMs int64
	}
	prof := map[string]*profile{}
	for _, s := range sides {
		prof[s.spec] = &profile{}
	}
	for r := 0; r < rounds; r++ {
		for _, i := range rand.Perm(len(sides)) {
			s := sides[i]
			p := prof[s.spec]
			probe := startLockProbe(base, name, s)
			runs := runProcWindow(b, children, s.spec, window)
			probe.stop(b)
			rate := 0.0
			for _, c := range runs {
				rate += float64(c.Ops) / c.Seconds
				p.ops += c.Ops
				p.seconds += c.Seconds / float64(len(runs)) // the window's mean length: all windows' wall time
				p.cpu += c.CPU
				p.batches += int64(c.Batches)
				p.writes += int64(c.Writes)
				p.p50 = append(p.p50, c.P50)
				p.p99 = append(p.p99, c.P99)
				want[s.spec] += c.Ops
			}
			p.rates = append(p.rates, rate)
			p.waitSamples += probe.samples
			p.waiting += probe.waiting
			p.rowLockWaits += probe.rowLockWaits
			p.rowLockMs += probe.rowLockMs
		}
	}
	stopProcChildren(b, children)

	for _, s := range sides {
		b.ReportMetric(median(prof[s.spec].rates), s.spec+"-ops/s")
	}
	ratio := func(a, c string) float64 {
		rs := make([]float64, rounds)
		for r := range rs {
			rs[r] = prof[a].rates[r] / prof[c].rates[r]
		}
		return median(rs)
	}
	for _, c := range []string{"per-op", "raw", "single-row"} {
		b.ReportMetric(ratio("coalesced", c), "coalesced/"+c)
	}
	for _, s := range sides[4:] {
		b.ReportMetric(ratio(s.spec, "raw"), s.spec+"/raw")
		b.ReportMetric(ratio(s.spec, "coalesced"), s.spec+"/coalesced")
	}
	b.Logf("%d processes x %d writers, pool %d per process (%d connections in all)", procs, writers, pool, procs*pool)
	b.Logf("%-22s %10s %9s %10s %9s %9s %10s %s", "side", "ops/s", "writes/st", "stmts/s", "p50 ms", "p99 ms", "cpu µs/op", "lock waits")
	for _, s := range sides {
		p := prof[s.spec]
		secs := p.seconds
		batches, writes := p.batches, p.writes
		if batches == 0 { // per-op, raw, single-row: one statement per write
			batches, writes = p.ops, p.ops
		}
		locks := ""
		switch name {
		case dbPostgres:
			if p.waitSamples > 0 {
				locks = fmt.Sprintf("waiting avg %.1f of %d backends", float64(p.waiting)/float64(p.waitSamples), procs*pool)
			}
		case dbMySQL:
			locks = fmt.Sprintf("%d row lock waits/s, %d ms waited per s (server-wide)", int64(float64(p.rowLockWaits)/secs), int64(float64(p.rowLockMs)/secs))
		}
		b.Logf("%-22s %10.0f %9.2f %10.0f %9.2f %9.2f %10.1f %s", s.spec, median(p.rates), float64(writes)/float64(batches),
			float64(batches)/secs, median(p.p50), median(p.p99), 1e6*p.cpu/float64(p.ops), locks)
	}
	checkProcTotals(b, base, sides, want)
}

// checkProcTotals compares every side's table (or the single row) with the increments its callers made.
func checkProcTotals(b *testing.B, db *gorm.DB, sides []procSide, want map[string]int64) {
	for _, s := range sides {
		var total int64
		var err error
		if s.kind == "single-row" {
			err = db.Model(&BenchPost{}).Where("id = ?", 1).Select("plain").Scan(&total).Error
		} else {
			// Outcome markers (on by default on the servers) are rows of the table too: not increments.
			err = db.Table(s.table).Select("COALESCE(SUM(count), 0)").Where("record_type <> ?", slotted.MarkerType).Scan(&total).Error
		}
		if err != nil {
			b.Error(err)
			continue
		}
		if total != want[s.spec] {
			b.Errorf("%s: total %d, increments made %d", s.spec, total, want[s.spec])
		}
	}
}

func startProcChildren(b *testing.B, name string, specs []string, procs, writers, pool int) []*procChild {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var out []*procChild
	b.Cleanup(func() {
		for _, c := range out {
			_ = c.in.Close()
			done := make(chan struct{})
			go func() { _ = c.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = c.cmd.Process.Kill()
			}
		}
	})
	for range procs {
		cmd := exec.Command(exe, "-test.run=^TestProcsBenchChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), procChildEnv+"=1", "SLOTTED_PROCS_DB="+name,
			"SLOTTED_PROCS_SIDES="+strings.Join(specs, ","),
			fmt.Sprintf("SLOTTED_PROCS_WRITERS=%d", writers), fmt.Sprintf("SLOTTED_PROCS_POOL=%d", pool))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c := &procChild{cmd: cmd, in: in, out: bufio.NewScanner(stdout)}
		out = append(out, c)
	}
	for _, c := range out { // each says "ready" once its pool and plugins are set up
		if _, err := c.read(); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

func stopProcChildren(b *testing.B, children []*procChild) {
	for _, c := range children {
		if _, err := io.WriteString(c.in, "quit\n"); err != nil {
			b.Error(err)
		}
	}
}

// read returns the child's next protocol line (go test's own output is skipped).
func (c *procChild) read() (string, error) {
	for c.out.Scan() {
		if line, ok := strings.CutPrefix(c.out.Text(), "procbench:"); ok {
			return line, nil
		}
	}
	if err := c.out.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("child %d exited", c.cmd.Process.Pid)
}

// runProcWindow has every child run side for d at once and returns what each measured.
func runProcWindow(b *testing.B, children []*procChild, side string, d time.Duration) []procRun {
	for _, c := range children {
		if _, err := fmt.Fprintf(c.in, "run %s %d\n", side, d.Milliseconds()); err != nil {
			b.Fatal(err)
		}
	}
	runs := make([]procRun, len(children))
	for i, c := range children {
		line, err := c.read()
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal([]byte(line), &runs[i]); err != nil {
			b.Fatal(err)
		}
		if runs[i].Err != "" {
			b.Fatalf("%s in process %d: %s", side, c.cmd.Process.Pid, runs[i].Err)
		}
	}
	return runs
}

// lockProbe samples lock waits on a side's table while its window runs.
type lockProbe struct {
	cancel                  context.CancelFunc
	wg                      sync.WaitGroup
	samples, waiting        int64
	rowLockWaits, rowLockMs int64
	before                  map[string]int64
	db                      *gorm.DB
	name                    string
	err                     error
}

func startLockProbe(db *gorm.DB, name string, s procSide) *lockProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &lockProbe{cancel: cancel, db: db, name: name}
	p.before, p.err = diagnose.ServerCounters(db)
	table := s.table
	if table == "" {
		table = "bench_posts"
	}
	if name != dbPostgres {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			waits, err := diagnose.LockWaits(db.WithContext(ctx), table)
			if err != nil {
				if ctx.Err() == nil && p.err == nil {
					p.err = err
				}
				return
			}
			p.samples++
			for _, w := range waits {
				p.waiting += w.Waiting
			}
		}
	}()
	return p
}

func (p *lockProbe) stop(b *testing.B) {
	p.cancel()
	p.wg.Wait()
	after, err := diagnose.ServerCounters(p.db)
	if err == nil {
		err = p.err
	}
	if err != nil {
		b.Fatal(err)
	}
	p.rowLockWaits = after["Innodb_row_lock_waits"] - p.before["Innodb_row_lock_waits"]
	p.rowLockMs = after["Innodb_row_lock_time"] - p.before["Innodb_row_lock_time"]
}

// TestProcsBenchChild is one app instance of BenchmarkProcsPaired, run by it as a separate process
// (SLOTTED_PROCS_CHILD=1); run directly it is skipped. It reads "run <side> <ms>" lines on stdin and
// answers each with one "procbench:{json}" line on stdout.
func TestProcsBenchChild(t *testing.T) {
	if os.Getenv(procChildEnv) == "" {
		t.Skip("the app instance process of BenchmarkProcsPaired")
	}
	name := os.Getenv("SLOTTED_PROCS_DB")
	writers, _ := strconv.Atoi(os.Getenv("SLOTTED_PROCS_WRITERS"))
	poolSize, _ := strconv.Atoi(os.Getenv("SLOTTED_PROCS_POOL"))
	base := openRaw(t, name)
	sqlDB, err := base.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(poolSize)
	sqlDB.SetMaxIdleConns(poolSize)
	ops := map[string]func() error{}
	dbs := map[string]*gorm.DB{}
	for _, spec := range strings.Split(os.Getenv("SLOTTED_PROCS_SIDES"), ",") {
		s, err := parseProcSide(spec)
		if err != nil {
			t.Fatal(err)
		}
		switch s.kind {
		case "single-row":
			stmt, err := sqlDB.Prepare(singleRowUpdate(name))
			if err != nil {
				t.Fatal(err)
			}
			ops[spec] = func() error { _, err := stmt.Exec(1); return err }
		case "raw":
			stmt, err := sqlDB.Prepare(strings.ReplaceAll(rawUpsert(name), benchTable, s.table))
			if err != nil {
				t.Fatal(err)
			}
			ops[spec] = func() error {
				_, err := stmt.Exec("bench_posts.likes", "1", rand.IntN(slotted.DefaultSlots), 1)
				return err
			}
		default:
			cfg := s.cfg
			cfg.Table, cfg.DisableAutoMigrate = s.table, true
			db := procPlugin(t, name, sqlDB, cfg)
			dbs[spec] = db
			ops[spec] = func() error { p := BenchPost{ID: 1}; return slotted.Increment(db, &p, "likes") }
		}
	}
	fmt.Println("procbench:ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var spec string
		var ms int
		if _, err := fmt.Sscanf(in.Text(), "run %s %d", &spec, &ms); err != nil {
			return // "quit", or the parent has gone
		}
		res := procWindow(ops[spec], dbs[spec], writers, time.Duration(ms)*time.Millisecond)
		line, _ := json.Marshal(res)
		fmt.Printf("procbench:%s\n", line)
	}
}

// procWindow runs op from writers goroutines for d and measures it (see procRun).
func procWindow(op func() error, db *gorm.DB, writers int, d time.Duration) (res procRun) {
	if op == nil {
		return procRun{Err: "unknown side"}
	}
	var before, after slotted.Stats
	if db != nil {
		before, _ = slotted.StatsOf(db)
	}
	cpu0 := procCPU()
	lat := make([][]time.Duration, writers)
	errs := make([]error, writers)
	stop := make(chan struct{})
	time.AfterFunc(d, func() { close(stop) })
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if err := op(); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.CPU = procCPU() - cpu0
	all := slices.Concat(lat...)
	slices.Sort(all)
	res.Ops = int64(len(all))
	if len(all) > 0 {
		res.P50 = float64(all[len(all)/2]) / float64(time.Millisecond)
		res.P99 = float64(all[len(all)*99/100]) / float64(time.Millisecond)
	}
	if db != nil {
		after, _ = slotted.StatsOf(db)
		res.Batches, res.Writes = after.Batches-before.Batches, after.BatchedWrites-before.BatchedWrites
	}
	for _, err := range errs {
		if err != nil { // the op that failed is not counted, and the totals check would not know if it landed
			res.Err = err.Error()
		}
	}
	return res
}

func procCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// procPlugin opens gorm (a fresh Config) on the process's pool with a plugin of its own.
func procPlugin(t testing.TB, name string, pool *sql.DB, cfg slotted.Config) *gorm.DB {
	db, err := gorm.Open(poolDialector(name, pool), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Use(slotted.New(cfg)); err != nil {
		t.Fatal(err)
	}
	return db
}

func poolDialector(name string, pool *sql.DB) gorm.Dialector {
	switch name {
	case dbMySQL:
		return mysql.New(mysql.Config{Conn: pool, SkipInitializeWithVersion: true})
	case dbPostgres:
		return postgres.New(postgres.Config{Conn: pool})
	}
	return sqliteOn(pool)
}

// setLinger sets Config.Linger from a side's /l option: a duration, or off.
func setLinger(cfg *slotted.Config, s string) error {
	if s == "off" {
		cfg.Linger = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	cfg.Linger = d
	return err
}
