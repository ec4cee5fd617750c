package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// svgElements parses an SVG file with encoding/xml over every token and
// returns the elements by id, and the number of elements with each class.
func svgElements(t *testing.T, path string) (ids map[string]xml.StartElement, classes map[string]int, text string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	ids, classes = map[string]xml.StartElement{}, map[string]int{}
	var sb strings.Builder
	dec := xml.NewDecoder(f)
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the chart must be well-formed XML")
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
				assert.Equal(t, "http://www.w3.org/2000/svg", tok.Name.Space)
			}
			for _, a := range tok.Attr {
				switch a.Name.Local {
				case "id":
					ids[a.Value] = tok
				case "class":
					for _, c := range strings.Fields(a.Value) {
						classes[c]++
					}
				}
				for _, bad := range []string{"NaN", "Inf"} {
					assert.NotContains(t, a.Value, bad, "attribute %s", a.Name.Local)
				}
			}
		case xml.CharData:
			sb.Write(tok)
		}
	}
	assert.Equal(t, "svg", root)
	return ids, classes, sb.String()
}

func chartResult(cells ...Cell) *Result {
	return &Result{
		Database: DBInfo{Dialect: dialectMySQL, Product: "MariaDB", Version: "10.11.19-MariaDB-0+deb12u1"},
		Settings: Settings{DurationSeconds: 1, Repeat: 3},
		Cells:    cells,
	}
}

func TestChartSeriesAndBaselines(t *testing.T) {
	var cells []Cell
	for _, w := range []int{1, 8, 64} {
		b := float64(1000 * w)
		cells = append(cells, runsOf(w, 0, b, b*0.9, b*1.1))
		for _, s := range []int{1, 4, 16, 64, 256} {
			v := float64(100 * w * s)
			c := runsOf(w, s, v, v*0.95, v*1.05)
			if s == 16 {
				c.Exact = false
			}
			if s == 4 {
				c = Cell{Workers: w, Slots: s, OpsPerSec: v, Exact: true} // no runs: no spread, no bar
			}
			cells = append(cells, c)
		}
	}
	res := chartResult(cells...)
	res.Recommendation = recommendFor(cells, 64, dialectMySQL)
	require.Equal(t, 256, res.Recommendation.Slots)
	res.Database.Product = `Maria<DB> & "co"` // text must be escaped
	path := filepath.Join(t.TempDir(), "chart.svg")
	require.NoError(t, saveChart(path, res))

	ids, classes, text := svgElements(t, path)
	for _, w := range []string{"1", "8", "64"} {
		assert.Contains(t, ids, "series-w"+w)
		assert.Contains(t, ids, "baseline-w"+w)
	}
	assert.Equal(t, 3, classes["series"], "one series per worker count")
	assert.Equal(t, 3, classes["baseline"], "one baseline marker per worker count")
	assert.Equal(t, 3, classes["baseline-band"], "the baseline's spread")
	assert.Equal(t, 12, classes["errorbar"], "a min–max bar per point with a spread")
	assert.Equal(t, 15, classes["point"])
	assert.Equal(t, 3, classes["inexact"], "cells whose total was off are marked")
	assert.Contains(t, ids, "recommended", "the recommended cell is ringed")
	assert.Contains(t, text, "recommended: 256 slots at 64 workers")
	assert.Contains(t, ids, "legend")
	assert.Contains(t, ids, "title")
	assert.Contains(t, text, `Maria<DB> & "co" 10.11.19`)
	assert.Contains(t, text, "slots per counter (log2 scale)")
	assert.Contains(t, text, "throughput (ops/s)")
	assert.Contains(t, text, "1-row, 8 workers: 8,000/s")
	assert.Contains(t, text, "64 workers, 256 slots: 1,638,400 ops/s (1,556,480–1,720,320)", "the spread in the tooltip")
	assert.Contains(t, text, "256", "x tick labels")
}

func TestChartSinglePointAndZeros(t *testing.T) {
	for name, cells := range map[string][]Cell{
		"single point":       {{Workers: 4, Slots: 16, OpsPerSec: 123, Exact: true}},
		"zeros":              {{Workers: 4, OpsPerSec: 0}, {Workers: 4, Slots: 2, OpsPerSec: 0, Exact: true}},
		"baseline only":      {{Workers: 1, OpsPerSec: 50}},
		"nothing":            nil,
		"NaN and Inf inputs": {{Workers: 2, OpsPerSec: 1 / zero()}, {Workers: 2, Slots: 8, OpsPerSec: zero() / zero(), Exact: true}},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chart.svg")
			require.NoError(t, saveChart(path, chartResult(cells...)))
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.NotContains(t, string(raw), "NaN")
			assert.NotContains(t, string(raw), "Inf")
			ids, _, _ := svgElements(t, path)
			for _, c := range cells {
				assert.Contains(t, ids, "series-w"+strconv.Itoa(c.Workers))
			}
		})
	}
}

func TestNiceStep(t *testing.T) {
	assert.Equal(t, 2000.0, niceStep(10500, 6))
	assert.Equal(t, 1.0, niceStep(0, 6))
	assert.Equal(t, 250.0, niceStep(1400, 6))
	assert.Equal(t, "2.5k", tickLabel(2500))
	assert.Equal(t, "500", tickLabel(500))
}

func zero() float64 { return 0 }

func TestChartLegendWraps(t *testing.T) {
	var series []chartSeries
	for _, w := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024} {
		series = append(series, chartSeries{workers: w})
	}
	items := legendLayout(series, Recommendation{Workers: 1024, Slots: 65536})
	require.Len(t, items, len(series)+2)
	rows := map[int]bool{}
	for _, it := range items {
		rows[it.y] = true
		assert.LessOrEqual(t, it.x+30+7*len(it.text), chartW, it.text)
	}
	assert.Greater(t, len(rows), 1, "many entries wrap onto more rows")
}
