// Command slotbench tells whether slotted counters pay off on your database,
// and with how many slots.
//
//	go run ./cmd/slotbench -dsn 'root@tcp(127.0.0.1:3306)/mydb'
//	go run ./cmd/slotbench -dsn 'root@unix(/run/mysqld/mysqld.sock)/mydb'
//	go run ./cmd/slotbench -dsn 'host=/var/run/postgresql user=postgres dbname=mydb'
//	go run ./cmd/slotbench -dsn 'postgres://postgres@127.0.0.1:5432/mydb?sslmode=disable'
//	go run ./cmd/slotbench -driver sqlite -dsn ./app.db -workers 1,4,16
//	go run ./cmd/slotbench                       # a temporary SQLite file
//	go run ./cmd/slotbench -dsn ... -instances 8 -workers 8   # 8 app instances of 8 writers each
//
// The database comes from -driver (mysql, postgres, sqlite) or from the
// DSN's scheme (mysql://, postgres://, postgresql://, sqlite://, file:), or,
// without either, from its form when only one database reads it; the DSN is
// checked by that driver's own parser, and anything unclear is an error, never
// a guess.
//
// For each worker count it measures the single-row baseline
//
//	UPDATE slotbench_<random>_rows SET n = n + 1 WHERE id = ?   -- prepared, through database/sql
//
// and slotted.AddRef on one hot counter at every -slots count, from that many
// concurrent goroutines on a pool of that many connections. Every cell runs
// -repeat times (default 5) for -duration each (at most -max-ops operations),
// in rounds that visit every cell once, alternately forwards and backwards, so
// that drift in the machine's load falls on all cells alike. Each cell reports
// the median ops/s with the spread (min..max) of its runs, p50/p99 latency,
// failed operations by kind, the plugin's retries, whether every run's total
// read back equals its successful operations, and the database's own evidence
// of row-lock waiting (InnoDB's row-lock counters; PostgreSQL backends waiting
// on a lock in the scratch tables, sampled every 50 ms; SQLite's busy errors).
//
// At -expect writers it compares cells round by round (a round the machine
// slowed down slows every cell in it, and the ratio within a round cancels
// that). It recommends slots only when their gain over the single-row UPDATE
// exceeds the spread of those per-round gains (the worst fifth of the rounds
// left out), and then the fewest slots that the best does not beat by more
// than 10% by the same test; otherwise it says the difference is within noise
// (or the single row is faster): keep the single column. On SQLite the answer
// is no: one writer at a time, slots cannot help. A chart with error bars goes
// to -svg. With the defaults (4 worker counts × 7 cells × 5 runs × 1 s) a
// sweep takes about 4 minutes.
//
// With -instances N each run of a cell is N separate processes (slotbench
// runs itself again), each with its own pool of -workers connections and its
// own plugin and coalescer: N app instances of -workers writers each, the
// shape most deployments run. One process coalesces all its writers into few
// statements and hides the contention between them, so a one-process sweep
// recommends too few slots for many instances; measure the shape you run.
// The report and the recommendation say which shape they assumed.
//
// It touches only two scratch tables of its own, slotbench_<random>_counters
// and slotbench_<random>_rows, and drops them at the end, also after an error
// or Ctrl-C/SIGTERM (a second Ctrl-C quits at once and may leave them
// behind). PostgreSQL's default max_connections of 100 allows about 90
// workers; slotbench checks the server's limit before starting.
//
// Exit status: 0 done, 1 error, 2 bad flags (a DSN that does not parse
// included), 130 interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	if os.Getenv(instanceEnv) != "" { // one app instance of a sweep with -instances (instances.go)
		os.Exit(runInstance(os.Stdin, os.Stdout))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its streams and exit status made testable.
func run(args []string, stdout, stderr io.Writer) int {
	stderr = &lockedWriter{w: stderr} // progress and the signal watcher write from two goroutines
	opts, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		if !errors.Is(err, errFlagSyntax) { // else the flag package has said it
			fmt.Fprintln(stderr, "slotbench:", err)
		}
		return 2
	}
	if opts.ExpectRequested > 0 && opts.ExpectRequested != opts.Expect {
		fmt.Fprintf(stderr, "slotbench: -expect %d was not measured; recommending for the nearest -workers value, %d\n",
			opts.ExpectRequested, opts.Expect)
	}

	// Ctrl-C or SIGTERM cancels ctx; the sweep then stops and drops its tables.
	// After the first signal the default handling is restored, so a second
	// Ctrl-C kills at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	defer close(done) // runs before stop: the watcher below then stays quiet
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		select {
		case <-done:
			return
		default:
		}
		stop()
		fmt.Fprintln(stderr, "\nslotbench: interrupted; dropping the scratch tables (Ctrl-C again to quit at once)")
	}()

	_, err = sweepAndReport(ctx, opts, stdout, stderr)
	switch {
	case ctx.Err() != nil:
		if err != nil {
			fmt.Fprintln(stderr, "slotbench:", err)
		}
		return 130
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "slotbench:", err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "slotbench:", err)
		return 1
	}
	return 0
}

// sweepAndReport runs the sweep and writes the table or JSON, and the chart.
// Partial results (after an interrupt or an error) are reported too.
func sweepAndReport(ctx context.Context, opts Options, stdout, stderr io.Writer) (*Result, error) {
	s, err := newSweep(opts)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if !opts.Quiet {
		cells := len(opts.Workers) * (1 + len(opts.Slots))
		fmt.Fprintf(stderr, "slotbench: %s database, scratch tables %s*, %d cells × %d runs of %v, interleaved\n",
			s.target.dialect, s.prefix, cells, opts.Repeat, opts.Duration)
		s.notice = func(msg string) { fmt.Fprintln(stderr, "slotbench:", msg) }
		s.progress = func(p progress) {
			what := methodSingleRow
			if p.Cell.Slots > 0 {
				what = plural(p.Cell.Slots, "slot")
			}
			fmt.Fprintf(stderr, "[%*d/%d] round %d, workers %4d, %-10s %10s ops/s  elapsed %v, ETA %v\n",
				len(fmt.Sprint(p.Total)), p.Done, p.Total, p.Round, p.Cell.Workers, what, fmtRate(p.Run.OpsPerSec),
				roundDur(p.Elapsed), roundDur(p.ETA))
		}
	}
	res, runErr := s.Run(ctx)
	if res == nil || len(res.Cells) == 0 {
		return res, runErr
	}
	if opts.JSON {
		err = writeJSON(stdout, res)
	} else {
		err = writeTable(stdout, res)
	}
	if err == nil && opts.SVG != "" {
		if err = saveChart(opts.SVG, res); err == nil && !opts.Quiet {
			fmt.Fprintf(stderr, "slotbench: chart written to %s\n", opts.SVG)
		}
	}
	return res, errors.Join(runErr, err)
}

// roundDur keeps progress times short: tenths of a second under a minute.
func roundDur(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
