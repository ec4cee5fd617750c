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
