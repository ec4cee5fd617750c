// Command slotbench tells whether slotted counters pay off on your database,
// and with how many slots.
//
//	go run ./cmd/slotbench -dsn 'root@tcp(127.0.0.1:3306)/mydb'
//	go run ./cmd/slotbench -dsn 'host=127.0.0.1 user=postgres dbname=mydb sslmode=disable'
//	go run ./cmd/slotbench -dsn ./app.db -workers 1,4,16
//	go run ./cmd/slotbench                       # a temporary SQLite file
//
// For each worker count it measures, for -duration each (and at most
// -max-ops operations), first the single-row baseline
//
//	UPDATE slotbench_<random>_rows SET n = n + 1 WHERE id = ?   -- prepared, through database/sql
//
// and then slotted.AddRef on one hot counter at every -slots count, from that
// many concurrent goroutines on a pool of that many connections. Each cell
// reports ops/s, p50/p99 latency, failed operations by kind, the plugin's
// retries, whether the total read back equals the successful operations,
// and the database's own evidence of row-lock waiting (InnoDB's row-lock
// counters; PostgreSQL backends waiting on a Lock, sampled every 50 ms;
// SQLite's busy errors). It then recommends the smallest slot count within 5%
// of the best throughput at -expect writers, says how that compares with the
// single-row UPDATE, and writes a chart to -svg.
//
// It touches only two scratch tables of its own, slotbench_<random>_counters
// and slotbench_<random>_rows, and drops them at the end, also after an error
// or Ctrl-C/SIGTERM (a second Ctrl-C quits at once and may leave them
// behind). PostgreSQL's default max_connections of 100 allows about 90
// workers; slotbench checks the server's limit before starting.
//
// Exit status: 0 done, 1 error, 2 bad flags, 130 interrupted.
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
		fmt.Fprintf(stderr, "slotbench: %s database, scratch tables %s*, %d cells of %v\n",
			s.target.dialect, s.prefix, len(opts.Workers)*(1+len(opts.Slots)), opts.Duration)
		s.progress = func(done, total int, c Cell, elapsed, eta time.Duration) {
			what := methodSingleRow
			if c.Slots > 0 {
				what = plural(c.Slots, "slot")
			}
			fmt.Fprintf(stderr, "[%*d/%d] workers %4d, %-10s %10s ops/s  p99 %-8s elapsed %v, ETA %v\n",
				len(fmt.Sprint(total)), done, total, c.Workers, what, fmtRate(c.OpsPerSec), fmtLatency(c.P99Ms),
				roundDur(elapsed), roundDur(eta))
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
