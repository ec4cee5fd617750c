package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// evidenceNote says what the lock evidence column holds on each database.
var evidenceNote = map[string]string{
	dialectMySQL: "lock evidence: deltas of SHOW GLOBAL STATUS Innodb_row_lock_waits, Innodb_row_lock_time (ms) " +
		"and Innodb_deadlocks across the cell (server-wide)",
	dialectPostgres: "lock evidence: backends waiting on a lock inside a statement on the scratch tables (diagnose.LockWaits: " +
		"pg_stat_activity, pg_locks), sampled every 50 ms; mean and max; pg_stat_database.deadlocks delta",
	dialectSQLite: "lock evidence: SQLITE_BUSY seen (errors returned plus busy conflicts the plugin retried); " +
		"SQLite has one writer at a time",
}

// writeTable prints the human-readable report: a header, one row per cell,
// notes, and the recommendation.
func writeTable(w io.Writer, res *Result) error {
	s := res.Settings
	var b strings.Builder
	fmt.Fprintf(&b, "slotbench on %s: %d worker counts × (single-row + %d slot counts) × %s of %s, interleaved\n",
		res.Database, len(s.Workers), len(s.Slots), plural(s.Repeat, "run"), strconv.FormatFloat(s.DurationSeconds, 'f', -1, 64)+"s")
	b.WriteString("ops/s: the median of a cell's runs; spread: their min–max; vs 1-row: medians' ratio\n")
	if s.Instances > 1 {
		fmt.Fprintf(&b, "shape: %d app instances per cell, each a separate process with its own pool and coalescer; workers: "+
			"writers per instance; ops/s: all instances together\n", s.Instances)
	}
	fmt.Fprintf(&b, "baseline: %s\n", s.Baseline)
	fmt.Fprintf(&b, "slotted:  slotted.AddRef(db, Ref{...}, 1) on one hot counter, plugin retries %d\n", s.PluginRetries)
	if note := evidenceNote[res.Database.Dialect]; note != "" {
		fmt.Fprintf(&b, "%s\n", note)
	}
	if res.Database.Dialect == dialectSQLite {
		fmt.Fprintf(&b, "driver: %s\n", sqliteDriverName)
	}
	b.WriteString("\n")

	header := []string{"workers", "slots", "ops/s", "spread", "vs 1-row", "p50", "p99", "errors", "retries", "lock evidence", "exact"}
	right := []bool{true, false, true, true, true, true, true, false, true, false, false}
	rows := [][]string{header}
	var notes []string
	baseline := map[int]float64{}
	for i, c := range res.Cells {
		if c.Slots == 0 {
			baseline[c.Workers] = c.OpsPerSec
		}
		if i > 0 && c.Workers != res.Cells[i-1].Workers {
			rows = append(rows, nil) // a blank line between worker counts
		}
		slots, vs, retries := methodSingleRow, "1.00", "-"
		if c.Slots > 0 {
			slots, vs, retries = strconv.Itoa(c.Slots), "-", strconv.FormatUint(c.Retries, 10)
			if base := baseline[c.Workers]; base > 0 {
				vs = fmt.Sprintf("%.2f", c.OpsPerSec/base)
			}
		}
		exact := "yes"
		for _, r := range c.Runs {
			if !r.Exact {
				exact = "NO"
				notes = append(notes, fmt.Sprintf("%d workers, %s slots, round %d: the total read back is %d, but %d increments succeeded",
					c.Workers, slots, r.Round, r.Total, r.Ops))
			}
		}
		if c.StoppedBy == "max-ops" {
			exact += " (max-ops)"
		}
		if c.Errors.FirstOther != "" {
			notes = append(notes, fmt.Sprintf("%d workers, %s slots: first other error: %s", c.Workers, slots, c.Errors.FirstOther))
		}
		rows = append(rows, []string{strconv.Itoa(c.Workers), slots, fmtRate(c.OpsPerSec), fmtRate(c.Low) + "–" + fmtRate(c.High), vs,
			fmtLatency(c.P50Ms), fmtLatency(c.P99Ms), c.Errors.String(), retries, c.Evidence.String(), exact})
	}
	writeAligned(&b, rows, right)
	if res.Interrupted {
		fmt.Fprintf(&b, "\ninterrupted after %s\n", plural(len(res.Cells), "cell"))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\nnote: %s", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	if len(res.Cells) > 0 {
		fmt.Fprintf(&b, "\n%s\n", res.Recommendation.Summary)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAligned prints rows as columns two spaces apart; right[i] right-aligns
// column i. A nil row prints as an empty line. (text/tabwriter aligns all
// columns one way only.)
func writeAligned(b *strings.Builder, rows [][]string, right []bool) {
	var width []int
	for _, r := range rows {
		for i, cell := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, cell := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < len(right) && right[i] {
				line.WriteString(pad + cell)
			} else {
				line.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

func writeJSON(w io.Writer, res *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
