package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleResult() *Result {
	dl := int64(0)
	cells := []Cell{
		{Workers: 8, Method: methodSingleRow, Ops: 1000, OpsPerSec: 1000, P50Ms: 0.5, P99Ms: 12, Total: 1000, Exact: true,
			Evidence: Evidence{InnoDB: &InnoDBEvidence{RowLockWaits: 900, RowLockTimeMs: 4000, Deadlocks: &dl}}},
		{Workers: 8, Slots: 16, Method: methodSlotted, Ops: 3000, OpsPerSec: 3000, P50Ms: 0.2, P99Ms: 2, Total: 3000, Exact: true,
			Retries: 3, Errors: Errors{Deadlock: 1, Other: 2, FirstOther: "boom"},
			Evidence: Evidence{InnoDB: &InnoDBEvidence{RowLockWaits: 5, RowLockTimeMs: 1, Deadlocks: &dl}}},
		{Workers: 8, Slots: 64, Method: methodSlotted, Ops: 3100, OpsPerSec: 3100, Total: 3099, Exact: false,
			Evidence: Evidence{InnoDB: &InnoDBEvidence{}}},
	}
	return &Result{
		Database:       DBInfo{Dialect: dialectMySQL, Product: "MariaDB", Version: "10.11.19-MariaDB"},
		Settings:       Settings{Slots: []int{16, 64}, Workers: []int{8}, DurationSeconds: 1, Expect: 8, Baseline: "prepared UPDATE"},
		Cells:          cells,
		Recommendation: recommendFor(cells, 8),
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeTable(&b, sampleResult()))
	out := b.String()
	t.Log("\n" + out)
	assert.Contains(t, out, "slotbench on MariaDB 10.11.19")
	assert.Regexp(t, `(?m)^workers\s+slots\s+ops/s\s+vs 1-row\s+p50\s+p99\s+errors\s+retries\s+lock evidence\s+exact$`, out)
	assert.Regexp(t, `(?m)^\s+8\s+single-row\s+1,000\s+1\.00\s+0\.50ms\s+12\.0ms\s+0\s+-\s+900 waits, 4000 ms, 0 deadlocks\s+yes$`, out)
	assert.Regexp(t, `(?m)^\s+8\s+16\s+3,000\s+3\.00 .*deadlock 1, other 2\s+3\s+5 waits`, out)
	assert.Contains(t, out, "NO (3099 of 3100)")
	assert.Contains(t, out, "first other error: boom")
	assert.Contains(t, out, "use 16 slots (3,000 ops/s): ×3.00 the single-row UPDATE")

	// Columns line up: every data row has its ops/s ending where the header's does.
	lines := strings.Split(out, "\n")
	var header string
	for _, l := range lines {
		if strings.HasPrefix(l, "workers") {
			header = l
		}
	}
	end := strings.Index(header, "ops/s") + len("ops/s")
	for _, l := range lines {
		if strings.HasPrefix(l, "      8  ") {
			assert.Equal(t, byte(' '), l[end], l)
			assert.NotEqual(t, byte(' '), l[end-1], l)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeJSON(&b, sampleResult()))
	var doc struct {
		Database struct{ Dialect, Product, Version string }
		Cells    []struct {
			Workers, Slots int
			Method         string
			OpsPerSec      float64 `json:"ops_per_sec"`
			Exact          bool
			LockEvidence   struct {
				InnoDB *struct {
					Waits int64 `json:"row_lock_waits"`
				} `json:"innodb"`
			} `json:"lock_evidence"`
		}
		Recommendation struct {
			Slots   int
			PaysOff bool `json:"pays_off"`
			Summary string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(b.String()), &doc))
	assert.Equal(t, "mysql", doc.Database.Dialect)
	assert.Equal(t, "MariaDB", doc.Database.Product)
	require.Len(t, doc.Cells, 3)
	assert.Equal(t, methodSingleRow, doc.Cells[0].Method)
	assert.Equal(t, int64(900), doc.Cells[0].LockEvidence.InnoDB.Waits)
	assert.Equal(t, 16, doc.Recommendation.Slots)
	assert.True(t, doc.Recommendation.PaysOff)
	assert.NotEmpty(t, doc.Recommendation.Summary)
}

func TestEvidenceString(t *testing.T) {
	assert.Equal(t, "waiting avg 2.5 max 7, 0 deadlocks", Evidence{Postgres: &PostgresEvidence{WaitingMean: 2.5, WaitingMax: 7}}.String())
	assert.Equal(t, "busy 3", Evidence{SQLite: &SQLiteEvidence{Busy: 3}}.String())
	assert.Equal(t, "1 waits, 2 ms", Evidence{InnoDB: &InnoDBEvidence{RowLockWaits: 1, RowLockTimeMs: 2}}.String(), "MySQL has no Innodb_deadlocks")
	assert.Equal(t, "-", Evidence{}.String())
}
