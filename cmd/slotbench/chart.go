package main

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartW     = 960
	chartH     = 580
	plotLeft   = 90
	plotRight  = chartW - 200 // the right margin holds the baseline labels
	plotBottom = chartH - 70
	legendTop  = 72
	legendRowH = 18
	labelGap   = 13 // minimum vertical distance between baseline labels
)

// palette: Tableau 10, distinguishable for most colour-blind readers.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b07aa1", "#9c755f", "#ff9da7", "#edc948", "#bab0ac"}

type chartPoint struct {
	slots       int
	ops, lo, hi float64 // median and spread of the runs
	exact       bool
}

type chartSeries struct {
	workers        int
	color          string
	points         []chartPoint // ascending slots
	baseline       float64
	baseLo, baseHi float64
	hasBaseline    bool
}

// spreadOf is a cell's min..max for the chart, never outside the median (a
// cell built without runs has none).
func spreadOf(c Cell) (lo, hi float64) {
	m := clean(c.OpsPerSec)
	if len(c.Runs) == 0 {
		return m, m
	}
	return min(m, clean(c.Low)), max(m, clean(c.High))
}

// seriesOf groups the cells by worker count.
func seriesOf(cells []Cell) []chartSeries {
	byW := map[int]*chartSeries{}
	var order []int
	for _, c := range cells {
		s := byW[c.Workers]
		if s == nil {
			s = &chartSeries{workers: c.Workers}
			byW[c.Workers] = s
			order = append(order, c.Workers)
		}
		lo, hi := spreadOf(c)
		if c.Slots == 0 {
			s.baseline, s.baseLo, s.baseHi, s.hasBaseline = clean(c.OpsPerSec), lo, hi, true
		} else {
			s.points = append(s.points, chartPoint{c.Slots, clean(c.OpsPerSec), lo, hi, c.Exact})
		}
	}
	slices.Sort(order)
	out := make([]chartSeries, 0, len(order))
	for i, w := range order {
		s := byW[w]
		s.color = palette[i%len(palette)]
		slices.SortFunc(s.points, func(a, b chartPoint) int { return a.slots - b.slots })
		out = append(out, *s)
	}
	return out
}

// clean maps NaN, Inf and negatives to 0, so no coordinate is ever NaN.
func clean(f float64) float64 {
	if !finite(f) || f < 0 {
		return 0
	}
	return f
}

// num formats a coordinate; never NaN or Inf.
func num(f float64) string { return strconv.FormatFloat(clean(f), 'f', 1, 64) }

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// niceStep picks a round tick step (1, 2, 2.5 or 5 times a power of ten)
// giving about n ticks over span.
func niceStep(span float64, n int) float64 {
	if !(span > 0) || !finite(span) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// tickLabel prints an ops/s tick: 2500 -> "2.5k", 12000 -> "12k".
func tickLabel(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// saveChart writes the chart to path.
func saveChart(path string, res *Result) error {
	var buf bytes.Buffer
	if err := writeChart(&buf, res); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeChart draws throughput against slots (log2 x axis), one polyline per
// worker count (<g class="series" id="series-w8">) through the medians, with
// an error bar per point (class "errorbar") from the min to the max of its
// runs, and a dashed line for the single-row baseline of each
// (<g class="baseline" id="baseline-w8">) over a band (class "baseline-band")
// spanning its runs.
func writeChart(w io.Writer, res *Result) error {
	series := seriesOf(res.Cells)
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	// Legend rows decide where the plot starts.
	rec := res.Recommendation
	legend := legendLayout(series, rec)
	plotTop := legend[len(legend)-1].y + legendRowH + 10

	// Scales. x: log2(slots), padded so end points sit off the axes.
	var slotsSeen []int
	maxY := 0.0
	for _, s := range series {
		maxY = max(maxY, s.baseHi)
		for _, pt := range s.points {
			slotsSeen = append(slotsSeen, pt.slots)
			maxY = max(maxY, pt.hi)
		}
	}
	slices.Sort(slotsSeen)
	slotsSeen = slices.Compact(slotsSeen)
	lo, hi := 0.0, 1.0
	if len(slotsSeen) > 0 {
		lo, hi = math.Log2(float64(slotsSeen[0])), math.Log2(float64(slotsSeen[len(slotsSeen)-1]))
	}
	pad := 0.35
	if hi-lo < 1 {
		pad = 1
	}
	lo, hi = lo-pad, hi+pad
	x := func(slots int) float64 {
		return plotLeft + (math.Log2(float64(slots))-lo)/(hi-lo)*(plotRight-plotLeft)
	}
	step := niceStep(maxY*1.05, 6)
	top := math.Max(step, math.Ceil(maxY*1.05/step)*step)
	y := func(v float64) float64 {
		return float64(plotBottom) - clean(v)/top*float64(plotBottom-plotTop)
	}

	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	p(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, chartH)
	title := fmt.Sprintf("slotbench on %s: increments/s on one hot counter", res.Database)
	p(`<text id="title" x="%d" y="30" font-size="18" font-weight="bold">%s</text>`+"\n", plotLeft, esc(title))
	sub := fmt.Sprintf("one line per worker count through the median of %s of %ss per cell, bars: min–max; "+
		"dashed: the single-row UPDATE, band: its min–max",
		plural(max(res.Settings.Repeat, 1), "run"), strconv.FormatFloat(res.Settings.DurationSeconds, 'f', -1, 64))
	if res.Interrupted {
		sub += " (interrupted: partial)"
	}
	p(`<text id="subtitle" x="%d" y="52" fill="#555555">%s</text>`+"\n", plotLeft, esc(sub))

	// Axes, grid and ticks.
	p(`<g id="y-axis" font-size="11" fill="#333333">` + "\n")
	for v := 0.0; v <= top+step/2; v += step {
		yy := y(v)
		p(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e5e5e5"/>`+"\n", plotLeft, num(yy), plotRight, num(yy))
		p(`<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", plotLeft-8, num(yy), esc(tickLabel(v)))
	}
	p(`<text transform="translate(24 %s) rotate(-90)" text-anchor="middle" font-size="12">throughput (ops/s)</text>`+"\n",
		num(float64(plotTop+plotBottom)/2))
	p("</g>\n")
	p(`<g id="x-axis" font-size="11" fill="#333333">` + "\n")
	for _, s := range slotsSeen {
		xx := x(s)
		p(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#f0f0f0"/>`+"\n", num(xx), plotTop, num(xx), plotBottom)
		p(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333333"/>`+"\n", num(xx), plotBottom, num(xx), plotBottom+5)
		p(`<text x="%s" y="%d" text-anchor="middle">%d</text>`+"\n", num(xx), plotBottom+18, s)
	}
	p(`<text x="%s" y="%d" text-anchor="middle" font-size="12">slots per counter (log2 scale)</text>`+"\n",
		num(float64(plotLeft+plotRight)/2), plotBottom+44)
	p("</g>\n")
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333333"/>`+"\n",
		plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)

	// Baselines: a dashed line across the plot, labelled in the right margin.
	// Labels are pushed apart when baselines lie close together.
	type label struct {
		i  int
		y0 float64 // the line's y
		y  float64 // the label's y
	}
	var labels []label
	for i, s := range series {
		if s.hasBaseline {
			labels = append(labels, label{i, y(s.baseline), y(s.baseline)})
		}
	}
	slices.SortFunc(labels, func(a, b label) int { return cmp.Compare(a.y0, b.y0) })
	for i := 1; i < len(labels); i++ {
		labels[i].y = math.Max(labels[i].y, labels[i-1].y+labelGap)
	}
	if n := len(labels); n > 0 && labels[n-1].y > plotBottom {
		shift := labels[n-1].y - plotBottom
		for i := range labels {
			labels[i].y -= shift
		}
	}
	for _, l := range labels {
		s := series[l.i]
		p(`<g id="baseline-w%d" class="baseline" data-workers="%d">`+"\n", s.workers, s.workers)
		if s.baseHi > s.baseLo {
			p(`<rect class="baseline-band" x="%d" y="%s" width="%d" height="%s" fill="%s" fill-opacity="0.12"/>`+"\n",
				plotLeft, num(y(s.baseHi)), plotRight-plotLeft, num(y(s.baseLo)-y(s.baseHi)), s.color)
		}
		p(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="7 5"/>`+"\n",
			plotLeft, num(l.y0), plotRight, num(l.y0), s.color)
		p(`<polyline points="%d,%s %d,%s" fill="none" stroke="%s" stroke-width="1"/>`+"\n",
			plotRight, num(l.y0), plotRight+6, num(l.y), s.color)
		p(`<text x="%d" y="%s" dominant-baseline="middle" font-size="11" fill="%s">%s</text>`+"\n",
			plotRight+9, num(l.y), s.color, esc(fmt.Sprintf("1-row, %s: %s/s", plural(s.workers, "worker"), fmtRate(s.baseline))))
		p("</g>\n")
	}

	// Series: a polyline and a marker per measured slot count.
	for si, s := range series {
		// Bars of different series at one slot count are set a little apart.
		dodge := (float64(si) - float64(len(series)-1)/2) * 3
		p(`<g id="series-w%d" class="series" data-workers="%d">`+"\n", s.workers, s.workers)
		if len(s.points) > 0 {
			pts := make([]string, len(s.points))
			for i, pt := range s.points {
				pts[i] = num(x(pt.slots)) + "," + num(y(pt.ops))
			}
			p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5" stroke-linejoin="round"/>`+"\n",
				strings.Join(pts, " "), s.color)
		}
		for _, pt := range s.points {
			if pt.hi > pt.lo {
				xx := x(pt.slots) + dodge
				p(`<path class="errorbar" d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n",
					num(xx), num(y(pt.lo)), num(y(pt.hi)),
					num(xx-4), num(y(pt.lo)), num(xx+4),
					num(xx-4), num(y(pt.hi)), num(xx+4), s.color)
			}
		}
		for _, pt := range s.points {
			fill, class, note := s.color, "point", ""
			if !pt.exact {
				fill, class, note = "#ffffff", "point inexact", " (total NOT exact)"
			}
			p(`<circle class="%s" cx="%s" cy="%s" r="4" fill="%s" stroke="%s" stroke-width="1.5"><title>%s</title></circle>`+"\n",
				class, num(x(pt.slots)), num(y(pt.ops)), fill, s.color,
				esc(fmt.Sprintf("%d workers, %d slots: %s%s", s.workers, pt.slots, rangeText(pt.ops, pt.lo, pt.hi), note)))
		}
		p("</g>\n")
	}

	// The recommended cell, ringed.
	if rec.Slots > 0 {
		for _, s := range series {
			for _, pt := range s.points {
				if s.workers == rec.Workers && pt.slots == rec.Slots {
					p(`<circle id="recommended" cx="%s" cy="%s" r="9" fill="none" stroke="#222222" stroke-width="1.5"><title>%s</title></circle>`+"\n",
						num(x(pt.slots)), num(y(pt.ops)), esc(rec.Summary))
				}
			}
		}
	}

	// Legend, above the plot.
	p(`<g id="legend" font-size="12">` + "\n")
	for _, it := range legend {
		switch {
		case it.series != nil:
			p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`+"\n", it.x, it.y, it.x+24, it.y, it.series.color)
		case it.ring:
			p(`<circle cx="%d" cy="%d" r="6" fill="none" stroke="#222222" stroke-width="1.5"/>`+"\n", it.x+12, it.y)
		default:
			p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555555" stroke-width="1.5" stroke-dasharray="7 5"/>`+"\n", it.x, it.y, it.x+24, it.y)
		}
		p(`<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", it.x+30, it.y, esc(it.text))
	}
	p("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// legendItem is one legend entry: a series line, the baseline dashes or the
// recommendation ring, followed by text.
type legendItem struct {
	x, y   int
	text   string
	series *chartSeries
	ring   bool
}

// legendLayout places the entries left to right from plotLeft, wrapping
// before one would run past the chart's right edge. Text widths are
// estimated (about 7 units per character at font-size 12).
func legendLayout(series []chartSeries, rec Recommendation) []legendItem {
	items := make([]legendItem, 0, len(series)+2)
	for i := range series {
		items = append(items, legendItem{text: plural(series[i].workers, "worker"), series: &series[i]})
	}
	items = append(items, legendItem{text: "single-row UPDATE"})
	if rec.Slots > 0 {
		items = append(items, legendItem{text: fmt.Sprintf("recommended: %s at %s",
			plural(rec.Slots, "slot"), plural(rec.Workers, "worker")), ring: true})
	}
	x, y := plotLeft, legendTop
	for i := range items {
		w := 30 + 7*len(items[i].text) + 24
		if x > plotLeft && x+w > chartW-10 {
			x, y = plotLeft, y+legendRowH
		}
		items[i].x, items[i].y = x, y
		x += w
	}
	return items
}
