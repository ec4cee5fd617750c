package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOptionsDefaults(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 4, 16, 64, 256, 1024}, o.Slots)
	assert.Equal(t, []int{1, 8, 32, 64}, o.Workers)
	assert.Equal(t, time.Second, o.Duration)
	assert.Equal(t, 5, o.Repeat)
	assert.Equal(t, "", o.Driver)
	assert.Equal(t, 64, o.Expect, "default: the largest worker count")
	assert.Equal(t, int64(defaultMaxOps), o.MaxOps)
	assert.Equal(t, "slotbench.svg", o.SVG)
	assert.Equal(t, "", o.DSN)
	assert.False(t, o.JSON)
	assert.False(t, o.Quiet)
}

func TestParseOptionsGood(t *testing.T) {
	o, err := parseOptions([]string{"-driver", "sqlite", "-repeat", "5", "-dsn", "x.db", "-slots", " 16, 4,4,1 ", "-workers", "32,8", "-duration", "150ms",
		"-expect", "8", "-json", "-svg", "", "-quiet", "-max-ops", "10", "-retries", "0"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 4, 16}, o.Slots, "sorted, deduplicated")
	assert.Equal(t, "sqlite", o.Driver)
	assert.Equal(t, 5, o.Repeat)
	assert.Equal(t, []int{8, 32}, o.Workers)
	assert.Equal(t, 150*time.Millisecond, o.Duration)
	assert.Equal(t, 8, o.Expect)
	assert.True(t, o.JSON)
	assert.True(t, o.Quiet)
	assert.Equal(t, "", o.SVG, "empty -svg disables the chart")
	assert.Equal(t, int64(10), o.MaxOps)
	assert.Equal(t, 0, o.Retries)
}

func TestParseOptionsBad(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-slots", "1,x"}, `"x" is not a whole number`},
		{[]string{"-slots", "0,2"}, "0 is not in 1..65536"},
		{[]string{"-slots", "70000"}, "70000 is not in 1..65536"},
		{[]string{"-slots", "1,,2"}, "empty element"},
		{[]string{"-slots", ""}, "empty element"},
		{[]string{"-workers", "-4"}, "-4 is not in 1..10000"},
		{[]string{"-workers", "2.5"}, `"2.5" is not a whole number`},
		{[]string{"-duration", "0s"}, "-duration must be positive"},
		{[]string{"-duration", "-1s"}, "-duration must be positive"},
		{[]string{"-duration", "soon"}, "invalid value"},
		{[]string{"-max-ops", "0"}, "-max-ops must be positive"},
		{[]string{"-repeat", "0"}, "-repeat must be in 1..1000"},
		{[]string{"-repeat", "1001"}, "-repeat must be in 1..1000"},
		{[]string{"-retries", "-2"}, "-retries must be 0 or more"},
		{[]string{"-expect", "-1"}, "-expect must be positive"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseOptions(tc.args, io.Discard)
			require.Error(t, err)
			assert.ErrorIs(t, err, errUsage)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestResolveExpect(t *testing.T) {
	w := []int{1, 8, 32, 64}
	assert.Equal(t, 64, resolveExpect(0, w), "unset: the largest")
	assert.Equal(t, 32, resolveExpect(32, w), "measured: itself")
	assert.Equal(t, 32, resolveExpect(30, w), "nearest")
	assert.Equal(t, 64, resolveExpect(1000, w), "beyond the largest")
	assert.Equal(t, 1, resolveExpect(2, w))
	assert.Equal(t, 64, resolveExpect(48, w), "a tie goes to the larger count")
	assert.Equal(t, 0, resolveExpect(5, nil))

	o, err := parseOptions([]string{"-workers", "1,8", "-expect", "6"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 8, o.Expect)
	assert.Equal(t, 6, o.ExpectRequested)
}

func TestRunUsageErrors(t *testing.T) {
	var stderr strings.Builder
	assert.Equal(t, 2, run([]string{"-workers", "0"}, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "-workers")
	// A DSN no driver reads is a usage error before anything is opened, not a SQLite file.
	stderr.Reset()
	dir := t.TempDir()
	t.Chdir(dir)
	assert.Equal(t, 2, run([]string{"-dsn", "postgres:/app"}, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "cannot tell which database")
	stderr.Reset()
	assert.Equal(t, 2, run([]string{"-driver", "postgres", "-dsn", "host=h port=x"}, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "not a PostgreSQL DSN")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no file was created")
	assert.Equal(t, 0, run([]string{"-h"}, io.Discard, io.Discard))
	_, err = parseOptions([]string{"-h"}, io.Discard)
	assert.True(t, errors.Is(err, flag.ErrHelp))
}
