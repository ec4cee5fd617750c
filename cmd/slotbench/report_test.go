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
	base := runsOf(8, 0, 1000, 900, 1100)
	base.P50Ms, base.P99Ms = 0.5, 12
	base.Evidence = Evidence{InnoDB: &InnoDBEvidence{RowLockWaits: 900, RowLockTimeMs: 4000, Deadlocks: &dl}}
	s16 := runsOf(8, 16, 3000, 2900, 3100)
	s16.P50Ms, s16.P99Ms = 0.2, 2
	s16.Retries, s16.Errors = 3, Errors{Deadlock: 1, Other: 2, FirstOther: "boom"}
	s16.Evidence = Evidence{InnoDB: &InnoDBEvidence{RowLockWaits: 5, RowLockTimeMs: 1, Deadlocks: &dl}}
	s64 := runsOf(8, 64, 3100, 3000, 3200)
	s64.Runs[1].Total, s64.Runs[1].Exact, s64.Exact = 2999, false, false
	s64.Evidence = Evidence{InnoDB: &InnoDBEvidence{}}
	cells := []Cell{base, s16, s64}
	return &Result{
		Database:       DBInfo{Dialect: dialectMySQL, Product: "MariaDB", Version: "10.11.19-MariaDB"},
		Settings:       Settings{Slots: []int{16, 64}, Workers: []int{8}, Repeat: 3, DurationSeconds: 1, Expect: 8, Baseline: "prepared UPDATE"},
		Cells:          cells,
		Recommendation: recommendFor(cells, 8, dialectMySQL),
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeTable(&b, sampleResult()))
	out := b.String()
	t.Log("\n" + out)
	assert.Contains(t, out, "slotbench on MariaDB 10.11.19: 1 worker counts × (single-row + 2 slot counts) × 3 runs of 1s, interleaved")
	assert.Regexp(t, `(?m)^workers\s+slots\s+ops/s\s+spread\s+vs 1-row\s+p50\s+p99\s+errors\s+retries\s+lock evidence\s+exact$`, out)
	assert.Regexp(t, `(?m)^\s+8\s+single-row\s+1,000\s+900–1,100\s+1\.00\s+0\.50ms\s+12\.0ms\s+0\s+-\s+900 waits, 4000 ms, 0 deadlocks\s+yes$`, out)
	assert.Regexp(t, `(?m)^\s+8\s+16\s+3,000\s+2,900–3,100\s+3\.00 .*deadlock 1, other 2\s+3\s+5 waits`, out)
	assert.Regexp(t, `(?m)^\s+8\s+64\s+.*\s+NO$`, out)
	assert.Contains(t, out, "8 workers, 64 slots, round 2: the total read back is 2999, but 3000 increments succeeded")
	assert.Contains(t, out, "first other error: boom")
	assert.Contains(t, out, "use 16 slots: 3,000 ops/s (2,900–3,100) against the single-row UPDATE's 1,000 ops/s (900–1,100); "+
		"round by round ×3.00 (×2.82–×3.22 over 3 rounds)")

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
		Settings struct{ Repeat int }
		Cells    []struct {
			Workers, Slots int
			Method         string
			OpsPerSec      float64 `json:"ops_per_sec"`
			Low            float64 `json:"ops_per_sec_min"`
			High           float64 `json:"ops_per_sec_max"`
			Runs           []struct {
				Round     int
				OpsPerSec float64 `json:"ops_per_sec"`
				Exact     bool
			}
			Exact        bool
			LockEvidence struct {
				InnoDB *struct {
					Waits int64 `json:"row_lock_waits"`
				} `json:"innodb"`
			} `json:"lock_evidence"`
		}
		Recommendation struct {
			Slots    int
			Verdict  string
			PaysOff  bool  `json:"pays_off"`
			NearBest []int `json:"near_best"`
			Summary  string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(b.String()), &doc))
	assert.Equal(t, "mysql", doc.Database.Dialect)
	assert.Equal(t, "MariaDB", doc.Database.Product)
	require.Len(t, doc.Cells, 3)
	assert.Equal(t, methodSingleRow, doc.Cells[0].Method)
	assert.Equal(t, 3, doc.Settings.Repeat)
	assert.Equal(t, []float64{1000, 900, 1100}, []float64{doc.Cells[0].OpsPerSec, doc.Cells[0].Low, doc.Cells[0].High})
	require.Len(t, doc.Cells[2].Runs, 3)
	assert.Equal(t, 2, doc.Cells[2].Runs[1].Round)
	assert.False(t, doc.Cells[2].Runs[1].Exact)
	assert.False(t, doc.Cells[2].Exact)
	assert.Equal(t, verdictUse, doc.Recommendation.Verdict)
	assert.Equal(t, []int{16}, doc.Recommendation.NearBest, "the inexact cell is left out")
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
