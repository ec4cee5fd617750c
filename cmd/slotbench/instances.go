package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"gorm.io/gorm/clause"

	"github.com/slotted-go/slotted"
)

// With -instances N every run of a cell is N app instances: N slotbench
// processes (this binary again, with instanceEnv set), each with its own pool
// of -workers connections and, for the plugin, its own plugin and coalescer,
// all writing the same hot counter (or the baseline's row) at once. One
// process with N × W writers coalesces all of them into few statements and
// hides the contention between them; N processes each coalesce only their own
// W, and their statements meet at the row locks, so slots matter again.

// instanceEnv marks a slotbench process run by another as one app instance.
const instanceEnv = "SLOTBENCH_INSTANCE"

// instanceJob is what an instance is told on its stdin, as one JSON line.
type instanceJob struct {
	Driver   string        `json:"driver"`
	DSN      string        `json:"dsn"`
	Counters string        `json:"counters"` // the plugin's table; "" for the baseline
	Baseline string        `json:"baseline"` // the baseline's prepared UPDATE
	Workers  int           `json:"workers"`
	Slots    int           `json:"slots"`
	Retries  int           `json:"retries"` // slotted.Config.MaxRetries
	Ref      slotted.Ref   `json:"ref"`
	WarmRef  slotted.Ref   `json:"warm_ref"`
	Duration time.Duration `json:"duration"`
	MaxOps   int64         `json:"max_ops"`
}

// instanceResult is an instance's answer: one JSON line after its load.
type instanceResult struct {
	OK        int64             `json:"ok"`
	Errs      Errors            `json:"errors"`
	Hist      map[int]uint64    `json:"hist"` // histogram buckets, sparse
	Elapsed   time.Duration     `json:"elapsed"`
	StoppedBy string            `json:"stopped_by"`
	Retries   uint64            `json:"retries"`
	Conflicts map[string]uint64 `json:"conflicts,omitempty"`
	Busy      int64             `json:"busy"`
	Err       string            `json:"err,omitempty"`
	Connect   bool              `json:"connect,omitempty"` // Err happened while connecting
}

// runInstance is main in an instance process: it reads its job, connects and
// warms up, says "ready", runs its load when told "go", and reports.
func runInstance(stdin io.Reader, stdout io.Writer) int {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	report := func(r instanceResult) int {
		line, _ := json.Marshal(r)
		fmt.Fprintf(stdout, "%s\n", line)
		return 0
	}
	if !in.Scan() {
		return 1
	}
	var job instanceJob
	if err := json.Unmarshal(in.Bytes(), &job); err != nil {
		return report(instanceResult{Err: err.Error()})
	}
	t, err := newTarget(job.Driver, job.DSN)
	if err != nil {
		return report(instanceResult{Err: err.Error()})
	}
	s := &sweep{target: t}
	db, err := s.open(job.Workers)
	if err != nil {
		return report(instanceResult{Err: err.Error(), Connect: true})
	}
	defer closeDB(db)
	sqlDB, err := db.DB()
	if err != nil {
		return report(instanceResult{Err: err.Error()})
	}
	ctx := context.Background()
	var op, warm func(context.Context) error
	if job.Counters == "" {
		stmt, err := sqlDB.PrepareContext(ctx, job.Baseline)
		if err != nil {
			return report(instanceResult{Err: err.Error(), Connect: true})
		}
		defer stmt.Close()
		op = func(ctx context.Context) error { _, err := stmt.ExecContext(ctx, 1); return err }
		warm = func(ctx context.Context) error { _, err := stmt.ExecContext(ctx, 2); return err }
	} else {
		if err := db.Use(slotted.New(slotted.Config{
			Slots: job.Slots, Table: job.Counters, MaxRetries: job.Retries, DisableAutoFill: true, DisableAutoMigrate: true,
		})); err != nil {
			return report(instanceResult{Err: err.Error()})
		}
		op = func(ctx context.Context) error { return slotted.AddRef(db.WithContext(ctx), job.Ref, 1) }
		warm = func(ctx context.Context) error { return slotted.AddRef(db.WithContext(ctx), job.WarmRef, 1) }
	}
	if err := openConns(ctx, sqlDB, job.Workers); err != nil {
		return report(instanceResult{Err: err.Error(), Connect: true})
	}
	if err := warmUp(ctx, job.Workers, warm); err != nil {
		return report(instanceResult{Err: "warm-up: " + err.Error()})
	}
	before, _ := slotted.StatsOf(db) // zero Stats for the baseline, which has no plugin
	fmt.Fprintln(stdout, "ready")
	if !in.Scan() || in.Text() != "go" {
		return 1
	}
	load, err := runLoad(ctx, job.Workers, job.Duration, job.MaxOps, op)
	if err != nil {
		return report(instanceResult{Err: err.Error()})
	}
	res := instanceResult{OK: load.ok, Errs: load.errs, Elapsed: load.elapsed, StoppedBy: load.stoppedBy, Hist: map[int]uint64{},
		Busy: load.errs.Busy}
	for i, n := range load.hist.counts {
		if n > 0 {
			res.Hist[i] = n
		}
	}
	if after, err := slotted.StatsOf(db); err == nil {
		res.Retries = after.Retries - before.Retries
		for kind, n := range after.Conflicts {
			if d := n - before.Conflicts[kind]; d > 0 {
				if res.Conflicts == nil {
					res.Conflicts = map[string]uint64{}
				}
				res.Conflicts[kind.String()] = d
			}
		}
	}
	return report(res)
}

// instance is a running instance process, seen from the sweep.
type instance struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func (i *instance) line() ([]byte, error) {
	if i.out.Scan() {
		return i.out.Bytes(), nil
	}
	if err := i.out.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("instance process %d exited", i.cmd.Process.Pid)
}

// runInstances measures one run of a cell as s.opts.Instances processes of
// workers writers each; it is runOne when -instances is more than 1.
func (s *sweep) runInstances(ctx context.Context, workers, slots, round int) (*measured, error) {
	m := &measured{method: methodSingleRow, sample: Sample{Round: round}}
	job := instanceJob{Driver: s.target.dialect, DSN: s.opts.DSN, Workers: workers, Slots: slots,
		Duration: s.opts.Duration, MaxOps: max(1, s.opts.MaxOps/int64(s.opts.Instances))}
	var readBack func(context.Context) (int64, error)
	var afterCell func(context.Context) error
	if slots == 0 {
		table := clause.Table{Name: s.rowsTable()}
		if err := s.admin.WithContext(ctx).Exec("UPDATE ? SET n = 0 WHERE id = 1", table).Error; err != nil {
			return nil, err
		}
		job.Baseline = fmt.Sprintf(baselineSQL, s.admin.Statement.Quote(s.rowsTable()))
		if s.target.dialect == dialectPostgres {
			job.Baseline = strings.Replace(job.Baseline, "?", "$1", 1)
		}
		readBack = func(ctx context.Context) (int64, error) {
			var n int64
			err := s.admin.WithContext(ctx).Raw("SELECT n FROM ? WHERE id = 1", table).Scan(&n).Error
			return n, err
		}
	} else {
		m.method = methodSlotted
		job.Counters = s.countersTable()
		job.Retries = s.opts.Retries
		if job.Retries == 0 {
			job.Retries = -1
		}
		job.Ref = slotted.Ref{Type: "slotbench", ID: fmt.Sprintf("i%d.w%d.s%d.r%d", s.opts.Instances, workers, slots, round)}
		job.WarmRef = slotted.Ref{Type: "slotbench.warmup", ID: job.Ref.ID}
		readBack = func(ctx context.Context) (int64, error) { return slotted.CountRef(s.admin.WithContext(ctx), job.Ref) }
		afterCell = func(ctx context.Context) error {
			return s.admin.WithContext(ctx).Exec("DELETE FROM ? WHERE record_type IN (?, ?) AND record_id = ?",
				clause.Table{Name: s.countersTable()}, job.Ref.Type, job.WarmRef.Type, job.Ref.ID).Error
		}
	}
	jobLine, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}

	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var insts []*instance
	defer func() {
		for _, i := range insts {
			_ = i.in.Close()
			_ = i.cmd.Wait() // each exits after its report, or when its stdin closes
		}
	}()
	for range s.opts.Instances {
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), instanceEnv+"=1")
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting an instance process: %w", err)
		}
		i := &instance{cmd: cmd, in: in, out: bufio.NewScanner(out)}
		i.out.Buffer(make([]byte, 64<<10), 1<<20)
		insts = append(insts, i)
		if _, err := fmt.Fprintf(in, "%s\n", jobLine); err != nil {
			return nil, err
		}
	}
	var connectErr, setupErr error
	for _, i := range insts { // each says "ready" after connecting and warming up, or reports why not
		line, err := i.line()
		if err != nil {
			return nil, err
		}
		if string(line) == "ready" {
			continue
		}
		var r instanceResult
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("instance %d: %q", i.cmd.Process.Pid, line)
		}
		if r.Connect {
			connectErr = fmt.Errorf("%w: instance %d: %s", errConnect, i.cmd.Process.Pid, r.Err)
		} else {
			setupErr = fmt.Errorf("instance %d: %s", i.cmd.Process.Pid, r.Err)
		}
	}
	if err := errors.Join(setupErr, connectErr); err != nil {
		return nil, err
	}

	finish, err := s.probe.begin(ctx)
	if err != nil {
		return nil, err
	}
	if s.onLoad != nil {
		s.onLoad(workers, slots, round)
	}
	for _, i := range insts {
		if _, err := io.WriteString(i.in, "go\n"); err != nil {
			return nil, err
		}
	}
	r := &m.sample
	r.StoppedBy = "duration"
	var runErr error
	var busy int64
	for _, i := range insts {
		line, err := i.line()
		if err != nil {
			runErr = errors.Join(runErr, err)
			continue
		}
		var res instanceResult
		if err := json.Unmarshal(line, &res); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("instance %d: %q", i.cmd.Process.Pid, line))
			continue
		}
		if res.Err != "" {
			runErr = errors.Join(runErr, fmt.Errorf("instance %d: %s", i.cmd.Process.Pid, res.Err))
			continue
		}
		r.Ops += res.OK
		r.Seconds += res.Elapsed.Seconds() / float64(len(insts)) // the mean elapsed time
		if res.Elapsed > 0 {
			r.OpsPerSec += float64(res.OK) / res.Elapsed.Seconds() // instances run side by side: rates add up
		}
		if res.StoppedBy == "max-ops" {
			r.StoppedBy = res.StoppedBy
		}
		m.errs.merge(res.Errs)
		for b, n := range res.Hist {
			if b >= 0 && b < histBuckets {
				m.hist.counts[b] += n
				m.hist.n += n
			}
		}
		m.retries += res.Retries
		for k, n := range res.Conflicts {
			if m.conflicts == nil {
				m.conflicts = map[string]uint64{}
			}
			m.conflicts[k] += n
			if k == slotted.Busy.String() {
				busy += int64(n)
			}
		}
		busy += res.Busy
	}
	ev, perr := finish(ctx)
	if err := errors.Join(ctx.Err(), runErr, perr); err != nil {
		return nil, err
	}
	if ev.SQLite != nil {
		ev.SQLite.Busy = busy
	}
	m.evidence = ev
	if r.Total, err = readBack(ctx); err != nil {
		return nil, fmt.Errorf("reading the total back: %w", err)
	}
	r.Exact = r.Total == r.Ops
	if afterCell != nil {
		if err := afterCell(ctx); err != nil {
			return nil, err
		}
	}
	return m, nil
}
