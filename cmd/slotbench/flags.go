package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotted-go/slotted"
)

const (
	// defaultSlots steps by 4: fewer cells leave time for more runs of each,
	// and neighbours differ by more than the noise of a shared machine.
	defaultSlots   = "1,4,16,64,256,1024"
	defaultWorkers = "1,8,32,64"
	// defaultMaxOps bounds a cell by count as well as by time, so a very fast
	// database (or a mistyped -duration) cannot run away.
	defaultMaxOps = 5_000_000
	// defaultRepeat runs each cell five times: the verdict compares cells
	// round by round and leaves the worst fifth of the rounds out, so with
	// five one disturbed round cannot decide it (with three, every round
	// counts). On two loaded cores three runs per cell let MariaDB's ×1.5–2
	// gain in once and not twice.
	defaultRepeat = 5
)

// Options is the parsed and validated command line.
type Options struct {
	Driver  string // "" (from the DSN), mysql, postgres or sqlite
	DSN     string
	Slots   []int // ascending, distinct
	Workers []int // ascending, distinct; writers per instance
	// Instances is how many app instances each cell runs: separate processes,
	// each with its own pool of Workers connections and its own coalescer.
	Instances int
	Duration  time.Duration
	Repeat    int // runs per cell, interleaved
	// Expect is the concurrency the recommendation is made for: one of Workers.
	// ExpectRequested is what -expect said (0: not given).
	Expect          int
	ExpectRequested int
	MaxOps          int64
	Retries         int // slotted.Config.MaxRetries semantics are mapped in pluginConfig
	JSON            bool
	SVG             string
	Quiet           bool
}

var (
	// errUsage wraps errors in the flags' values, so main exits with status 2.
	errUsage = errors.New("bad flag")
	// errFlagSyntax: the flag package has printed the error and the usage already.
	errFlagSyntax = errors.New("bad command line")
)

// parseOptions parses args (without the program name). Usage text and flag
// errors go to stderr.
func parseOptions(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("slotbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Driver, "driver", "", "mysql (MariaDB too), postgres or sqlite; default: from the -dsn's scheme or form, "+
		"when only one database reads it")
	fs.StringVar(&o.DSN, "dsn", "", "the database, in any form its driver takes. "+dsnForms+
		". Empty: a temporary SQLite file, deleted afterwards")
	slots := fs.String("slots", defaultSlots, "comma-separated slot counts to try")
	workers := fs.String("workers", defaultWorkers, "comma-separated numbers of concurrent writers")
	fs.IntVar(&o.Instances, "instances", 1, "app instances: each cell runs this many separate processes, each with its own "+
		"pool and coalescer and -workers writers (your deployment's shape: instances x writers per instance)")
	fs.DurationVar(&o.Duration, "duration", time.Second, "how long each run of a cell lasts")
	fs.IntVar(&o.Repeat, "repeat", defaultRepeat, "runs per cell, interleaved across cells so that drift hits all alike; "+
		"the table shows the median and the spread (min..max), and a recommendation needs 2 or more")
	fs.IntVar(&o.ExpectRequested, "expect", 0, "concurrency to recommend a slot count for (default: the largest -workers; "+
		"a value not in -workers uses the nearest one)")
	fs.Int64Var(&o.MaxOps, "max-ops", defaultMaxOps, "safety bound: stop a run of a cell after this many operations")
	fs.IntVar(&o.Retries, "retries", 5, "plugin retries after a lock conflict (slotted.Config.MaxRetries; 0 disables)")
	fs.BoolVar(&o.JSON, "json", false, "print a JSON document instead of the table")
	fs.StringVar(&o.SVG, "svg", "slotbench.svg", "write a throughput chart to this file (empty: no chart)")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress on stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slotbench [flags]\n\n"+
			"Measures single-row UPDATE against slotted counters at each slot count and concurrency on your\n"+
			"database, using scratch tables slotbench_<random>_* that it drops afterwards, and recommends a slot count.\n"+
			"Each cell runs -repeat times for -duration (or -max-ops); with the defaults (4 worker counts x 7 cells x 5 runs\n"+
			"x 1s) a sweep takes about 4 minutes.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w: %v", errUsage, errFlagSyntax, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q (flags only)", errUsage, fs.Arg(0))
	}

	var err error
	if o.Slots, err = parseList("-slots", *slots, slotted.MaxSlots); err != nil {
		return o, err
	}
	// Beyond a few thousand connections every database here refuses anyway;
	// the bound catches typos like 640000 before opening anything.
	if o.Workers, err = parseList("-workers", *workers, 10000); err != nil {
		return o, err
	}
	switch {
	case o.Instances < 1 || o.Instances > 1000:
		return o, fmt.Errorf("%w: -instances must be in 1..1000, got %d", errUsage, o.Instances)
	case o.Repeat < 1 || o.Repeat > 1000:
		return o, fmt.Errorf("%w: -repeat must be in 1..1000, got %d", errUsage, o.Repeat)
	case o.Duration <= 0:
		return o, fmt.Errorf("%w: -duration must be positive, got %v", errUsage, o.Duration)
	case o.MaxOps <= 0:
		return o, fmt.Errorf("%w: -max-ops must be positive, got %d", errUsage, o.MaxOps)
	case o.Retries < 0:
		return o, fmt.Errorf("%w: -retries must be 0 or more, got %d", errUsage, o.Retries)
	case o.ExpectRequested < 0:
		return o, fmt.Errorf("%w: -expect must be positive, got %d", errUsage, o.ExpectRequested)
	}
	o.Expect = resolveExpect(o.ExpectRequested, o.Workers)
	return o, nil
}

// parseList parses "1,2, 4" into ascending distinct positive ints no larger
// than limit. Order and repeats don't matter to a sweep, so they are
// normalised rather than rejected.
func parseList(name, s string, limit int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("%w: %s %q: empty element", errUsage, name, s)
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: %q is not a whole number", errUsage, name, s, f)
		}
		if n < 1 || n > limit {
			return nil, fmt.Errorf("%w: %s %q: %d is not in 1..%d", errUsage, name, s, n, limit)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// resolveExpect picks the measured worker count the recommendation is made
// for. A requested value that was not measured maps to the nearest measured
// one (the larger on a tie: under-estimating contention is the costlier
// mistake), rather than failing after the sweep has run. 0 means the largest.
func resolveExpect(requested int, workers []int) int {
	if len(workers) == 0 {
		return 0
	}
	if requested <= 0 {
		return workers[len(workers)-1]
	}
	best := workers[0]
	for _, w := range workers[1:] {
		if d, bd := abs(w-requested), abs(best-requested); d < bd || d == bd && w > best {
			best = w
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
