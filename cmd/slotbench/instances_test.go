package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets this test binary be an instance process of a sweep with -instances, as the slotbench binary is.
func TestMain(m *testing.M) {
	if os.Getenv(instanceEnv) != "" {
		os.Exit(runInstance(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestSweepInstances: each run of a cell is 3 processes of 2 writers on the same counter (or row); their
// operations add up to the total read back, exactly, and the recommendation names the shape it assumed.
func TestSweepInstances(t *testing.T) {
	for _, d := range testDBs(t) {
		if d.name == dialectSQLite {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			o := tinyOptions(d.name, d.dsnFor(t))
			o.Instances, o.Workers, o.Expect = 3, []int{2}, 2
			s, err := newSweep(o)
			require.NoError(t, err)
			defer s.close()
			res, err := s.Run(context.Background())
			require.NoError(t, err)
			assert.Equal(t, 3, res.Settings.Instances)
			require.Len(t, res.Cells, 3)
			for _, c := range res.Cells {
				require.Len(t, c.Runs, 2)
				for _, r := range c.Runs {
					assert.True(t, r.Exact, "slots %d round %d: total %d, ops %d", c.Slots, r.Round, r.Total, r.Ops)
					assert.Positive(t, r.Ops)
				}
				assert.Equal(t, c.Ops, int64(c.hist.n), "every instance's latencies are in the cell")
			}
			assert.Equal(t, 3, res.Recommendation.Instances)
			assert.Contains(t, res.Recommendation.Summary, "At 3 app instances × 2 writers each (6 in all")
			var out strings.Builder
			require.NoError(t, writeTable(&out, res))
			assert.Contains(t, out.String(), "shape: 3 app instances per cell")
		})
	}
}

func TestInstancesFlag(t *testing.T) {
	o, err := parseOptions([]string{"-instances", "8", "-workers", "8"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 8, o.Instances)
	o, err = parseOptions(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 1, o.Instances, "one process, as before")
	_, err = parseOptions([]string{"-instances", "0"}, io.Discard)
	assert.ErrorIs(t, err, errUsage)

	o = tinyOptions(dialectSQLite, "")
	o.Instances = 2
	_, err = newSweep(o)
	assert.True(t, errors.Is(err, errUsage), "SQLite has one writer: %v", err)
}

// TestRecommendForInstances: with several instances the pick's median is within 10% of the best's, even
// when the round-by-round test, with spreads as wide as many processes make, would admit fewer slots.
func TestRecommendForInstances(t *testing.T) {
	cell := func(slots int, rates ...float64) Cell {
		c := Cell{Workers: 5, Slots: slots}
		for i, r := range rates {
			c.add(&measured{sample: Sample{Round: i + 1, Ops: 1, Seconds: 1 / r, OpsPerSec: r, Exact: true}})
		}
		return c
	}
	// Medians as measured on PostgreSQL, 8 instances x 5 writers; rounds spread so that 16 slots pass the
	// round test against 256.
	cells := []Cell{
		cell(0, 336, 700, 768, 900, 1061),
		cell(1, 2545, 3000, 3671, 4000, 4168),
		cell(16, 7000, 7600, 7670, 7700, 8000),
		cell(64, 6420, 8000, 8830, 10000, 11304),
		cell(256, 6000, 7800, 10604, 12000, 15000),
	}
	one := recommendFor(cells, 5, dialectPostgres)
	require.True(t, one.PaysOff)
	many := recommendForInstances(cells, 8, 5, dialectPostgres)
	assert.True(t, many.PaysOff)
	assert.Equal(t, 256, many.BestSlots)
	assert.GreaterOrEqual(t, many.OpsPerSec, 0.9*many.BestOpsPerSec, "picked %d slots", many.Slots)
	assert.Contains(t, many.Summary, "At 8 app instances × 5 writers each (40 in all")
	assert.Contains(t, many.Summary, "use "+plural(many.Slots, "slot"))
	assert.Equal(t, 16, one.Slots, "one process's rule: the fewest slots that pass the round test")
	assert.Equal(t, 256, many.Slots, "64 slots' median is 17% below the best's")
}
