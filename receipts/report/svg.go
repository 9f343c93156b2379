package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chart is anything the report can draw as one inline SVG element.
// LineChart and HeatMap are the two kinds; their output is a pure
// function of their fields (fixed float formatting, no map iteration), so
// equal charts give equal bytes.
type Chart interface {
	SVG() []byte
}

// Point is one measurement of a series.
type Point struct {
	X, Y float64
	// Tip is the marker's hover text; empty gives "x: y".
	Tip string
}

// Series is one line of a LineChart.
type Series struct {
	Name   string
	Points []Point
	// Color is an SVG colour; empty takes the palette entry of the
	// series' position.
	Color string
	// Dashed draws the line dashed (a candidate beside its baseline).
	Dashed bool
}

// LineChart draws series of points against a shared x axis: one polyline
// and one circle per point for each series, axis titles, tick labels and
// a legend. A series with no points keeps its legend entry and draws
// nothing.
type LineChart struct {
	Title string
	// Note is a line under the title (what the figures are, e.g. that a
	// twin ran time-scaled).
	Note           string
	XLabel, YLabel string
	// LogX spaces x by log2 and puts one tick at every x in the data: the
	// concurrency levels 1, 4, 16, 32 read evenly. x must be > 0.
	LogX bool
	// YMax fixes the top of the y axis (1 for ratios); 0 picks a round
	// value above the data.
	YMax float64
	// YPercent labels y ticks as percentages of 1.
	YPercent bool
	// YIntegers keeps y ticks on whole numbers (counts).
	YIntegers bool
	Series    []Series
	// Width and Height in px; 0 gives 560 × 320.
	Width, Height int
}

// Palette holds the series colours, in order: distinguishable in colour
// and in grey (Okabe–Ito).
var palette = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"}

const (
	marginLeft   = 64.0
	marginRight  = 16.0
	marginTop    = 48.0
	marginBottom = 76.0
)

// SVG renders the chart.
func (c LineChart) SVG() []byte {
	w, h := float64(or(c.Width, 560)), float64(or(c.Height, 320))
	x0, x1 := marginLeft, w-marginRight
	y0, y1 := h-marginBottom, marginTop // y0 is the bottom
	legend, rows := legendLayout(c.Series, x0, x1, y0+52)
	h += 14 * float64(rows-1)
	var xs []float64
	ymax := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !finite(p.X) || !finite(p.Y) || (c.LogX && p.X <= 0) {
				continue
			}
			xs = append(xs, p.X)
			ymax = max(ymax, p.Y)
		}
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	xpos := func(v float64) float64 { return (x0 + x1) / 2 }
	var xticks []float64
	if len(xs) > 0 {
		lo, hi := xs[0], xs[len(xs)-1]
		f := func(v float64) float64 { return v }
		if c.LogX {
			f = math.Log2
			xticks = xs
		} else {
			xticks = niceTicks(lo, hi)
			lo, hi = min(lo, xticks[0]), max(hi, xticks[len(xticks)-1])
		}
		if hi > lo {
			flo, fhi := f(lo), f(hi)
			xpos = func(v float64) float64 { return x0 + (f(v)-flo)/(fhi-flo)*(x1-x0) }
		}
	}
	top := c.YMax
	if top <= 0 {
		top = ymax
	}
	if c.YIntegers {
		top = max(top, 1)
	}
	yticks := niceTicks(0, top)
	if c.YIntegers && len(yticks) > 1 && yticks[1] < 1 {
		yticks = niceTicksStep(0, top, 1)
	}
	if c.YMax > 0 {
		yticks = slices.DeleteFunc(yticks, func(v float64) bool { return v > c.YMax+1e-12 })
	} else {
		top = yticks[len(yticks)-1]
	}
	ypos := func(v float64) float64 { return y0 - v/top*(y0-y1) }
	ydec := decimals(yticks)

	var b svgBuilder
	b.open(w, h, c.Title)
	b.titles(c.Title, c.Note, w)
	// Grid and y ticks.
	b.raw(`<g class="axis y-axis" font-size="11" fill="#333">`)
	for _, t := range yticks {
		y := ypos(t)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`, n(x0), n(y), n(x1), n(y))
		label := strconv.FormatFloat(t, 'f', ydec, 64)
		if c.YPercent {
			label = strconv.FormatFloat(100*t, 'f', max(0, ydec-2), 64) + "%"
		}
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, n(x0-6), n(y+4), esc(label))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`,
		n(16), n((y0+y1)/2), n(16), n((y0+y1)/2), esc(c.YLabel))
	b.raw(`</g>`)
	// x axis.
	b.raw(`<g class="axis x-axis" font-size="11" fill="#333">`)
	b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, n(x0), n(y0), n(x1), n(y0))
	xdec := decimals(xticks)
	for _, t := range xticks {
		x := xpos(t)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, n(x), n(y0), n(x), n(y0+4))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, n(x), n(y0+17), strconv.FormatFloat(t, 'f', xdec, 64))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, n((x0+x1)/2), n(y0+34), esc(c.XLabel))
	b.raw(`</g>`)
	// Series.
	for i, s := range c.Series {
		col := seriesColor(s.Color, i)
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		b.f(`<g class="series" data-series="%s">`, esc(s.Name))
		var pts []string
		var marks []string
		for _, p := range s.Points {
			if !finite(p.X) || !finite(p.Y) || (c.LogX && p.X <= 0) {
				continue
			}
			x, y := xpos(p.X), ypos(min(p.Y, top))
			pts = append(pts, n(x)+","+n(y))
			tip := p.Tip
			if tip == "" {
				tip = num(p.X) + ": " + num(p.Y)
			}
			marks = append(marks, fmt.Sprintf(`<circle class="point" cx="%s" cy="%s" r="3.5" fill="%s"><title>%s</title></circle>`, n(x), n(y), col, esc(s.Name+", "+tip)))
		}
		b.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.Join(pts, " "), col, dash)
		for _, m := range marks {
			b.raw(m)
		}
		b.raw(`</g>`)
	}
	// Legend: rows under the x axis title, as many as the names need.
	b.raw(`<g class="legend" font-size="11" fill="#333">`)
	for i, e := range legend {
		col := seriesColor(c.Series[i].Color, i)
		dash := ""
		if c.Series[i].Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, n(e.x), n(e.y-4), n(e.x+22), n(e.y-4), col, dash)
		b.f(`<text x="%s" y="%s">%s</text>`, n(e.x+27), n(e.y), esc(c.Series[i].Name))
	}
	b.raw(`</g>`)
	b.close()
	return b.Bytes()
}

type legendEntry struct{ x, y float64 }

// legendLayout places one legend entry per series, left to right,
// wrapping into a new row when a name would pass x1.
func legendLayout(ss []Series, x0, x1, y float64) ([]legendEntry, int) {
	var out []legendEntry
	x, rows := x0, 1
	for _, s := range ss {
		width := 27 + 6.5*float64(len([]rune(s.Name)))
		if x > x0 && x+width > x1 {
			x, y, rows = x0, y+14, rows+1
		}
		out = append(out, legendEntry{x, y})
		x += width + 18
	}
	return out, rows
}

// HeatMap draws a grid of cells coloured by value, each with its value
// and a status text (a speed matrix: rows context lengths, columns
// concurrency levels, colour tok/s, status Valid, Requests queued,
// Looped, Failed, Skipped).
type HeatMap struct {
	Title, Note string
	// RowLabel and ColLabel title the two axes.
	RowLabel, ColLabel string
	Rows, Cols         []string
	// Cells[r][c] is the cell at row r, column c; missing cells are
	// drawn as not measured.
	Cells [][]HeatCell
	// Unit follows the values in the colour legend ("tok/s").
	Unit string
	// LogColor spreads the colours by log(value), for values over orders
	// of magnitude (tok/s from c=1 to c=64); values must be > 0.
	LogColor bool
	// Width in px; 0 gives 80 px per column plus the labels. Cells are
	// 44 px high.
	Width int
}

// HeatCell is one heat-map cell.
type HeatCell struct {
	// Value colours the cell; nil draws it grey (nothing measured).
	Value *float64
	// Status is shown under the value (Valid, Requests queued, …).
	Status string
	// Tip is extra hover text.
	Tip string
}

// heat runs from light to dark (viridis stops, reversed so that more is
// darker).
var heat = [][3]float64{{253, 231, 37}, {94, 201, 98}, {33, 145, 140}, {59, 82, 139}, {68, 1, 84}}

// SVG renders the heat map.
func (m HeatMap) SVG() []byte {
	const cellH, rowLabelW, top, colLabelH = 44.0, 96.0, 48.0, 36.0
	// Wide enough for the longest status ("Requests queued") at 10 px.
	cellW := 80.0
	for r := range m.Rows {
		for c := range m.Cols {
			cellW = max(cellW, 5.8*float64(utf8.RuneCountInString(m.cell(r, c).Status))+14)
		}
	}
	if m.Width > 0 && len(m.Cols) > 0 {
		cellW = max(40, (float64(m.Width)-rowLabelW-16)/float64(len(m.Cols)))
	}
	w := rowLabelW + cellW*float64(len(m.Cols)) + 16
	gridTop := top + colLabelH
	h := gridTop + cellH*float64(len(m.Rows)) + 56
	scale := func(v float64) float64 { return v }
	if m.LogColor {
		scale = math.Log
	}
	usable := func(v *float64) bool { return v != nil && finite(*v) && (!m.LogColor || *v > 0) }
	lo, hi := math.Inf(1), math.Inf(-1)
	for r := range m.Rows {
		for c := range m.Cols {
			if v := m.cell(r, c).Value; usable(v) {
				lo, hi = min(lo, *v), max(hi, *v)
			}
		}
	}
	var b svgBuilder
	b.open(w, h, m.Title)
	b.titles(m.Title, m.Note, w)
	b.raw(`<g class="axis" font-size="11" fill="#333">`)
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, n(rowLabelW+cellW*float64(len(m.Cols))/2), n(top+12), esc(m.ColLabel))
	for c, name := range m.Cols {
		b.f(`<text class="col-label" x="%s" y="%s" text-anchor="middle">%s</text>`, n(rowLabelW+cellW*(float64(c)+0.5)), n(gridTop-6), esc(name))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="start">%s</text>`, n(8), n(gridTop-6), esc(m.RowLabel))
	for r, name := range m.Rows {
		b.f(`<text class="row-label" x="%s" y="%s" text-anchor="end">%s</text>`, n(rowLabelW-8), n(gridTop+cellH*(float64(r)+0.5)+4), esc(name))
	}
	b.raw(`</g>`)
	b.raw(`<g class="cells" font-size="11">`)
	for r := range m.Rows {
		for c := range m.Cols {
			cell := m.cell(r, c)
			x, y := rowLabelW+cellW*float64(c), gridTop+cellH*float64(r)
			fill, ink, val := "#d9d9d9", "#333", "—"
			if v := cell.Value; usable(v) {
				t := 0.5
				if hi > lo {
					t = (scale(*v) - scale(lo)) / (scale(hi) - scale(lo))
				}
				fill, ink, val = heatColor(t), inkOn(t), num(*v)
			}
			tip := m.Rows[r] + " × " + m.Cols[c] + ": " + val
			if m.Unit != "" && cell.Value != nil {
				tip += " " + m.Unit
			}
			if cell.Status != "" {
				tip += ", " + cell.Status
			}
			if cell.Tip != "" {
				tip += ", " + cell.Tip
			}
			b.f(`<g class="cell" data-row="%s" data-col="%s"><title>%s</title>`, esc(m.Rows[r]), esc(m.Cols[c]), esc(tip))
			b.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#fff"/>`, n(x), n(y), n(cellW), n(cellH), fill)
			b.f(`<text class="value" x="%s" y="%s" text-anchor="middle" fill="%s" font-weight="bold">%s</text>`, n(x+cellW/2), n(y+18), ink, esc(val))
			b.f(`<text class="status" x="%s" y="%s" text-anchor="middle" fill="%s" font-size="10">%s</text>`, n(x+cellW/2), n(y+33), ink, esc(cell.Status))
			b.raw(`</g>`)
		}
	}
	b.raw(`</g>`)
	// Colour legend: five steps from the lowest to the highest value.
	if hi >= lo {
		b.raw(`<g class="legend" font-size="11" fill="#333">`)
		ly := h - 34
		for i := range 5 {
			b.f(`<rect x="%s" y="%s" width="28" height="12" fill="%s"/>`, n(rowLabelW+28*float64(i)), n(ly), heatColor(float64(i)/4))
		}
		unit := ""
		if m.Unit != "" {
			unit = " " + m.Unit
		}
		b.f(`<text x="%s" y="%s" text-anchor="end">%s</text>`, n(rowLabelW-4), n(ly+10), esc(num(lo)))
		b.f(`<text x="%s" y="%s">%s</text>`, n(rowLabelW+144), n(ly+10), esc(num(hi)+unit))
		b.f(`<rect x="%s" y="%s" width="28" height="12" fill="#d9d9d9"/><text x="%s" y="%s">not measured</text>`, n(rowLabelW+230), n(ly), n(rowLabelW+262), n(ly+10))
		b.raw(`</g>`)
	}
	b.close()
	return b.Bytes()
}

func (m HeatMap) cell(r, c int) HeatCell {
	if r < len(m.Cells) && c < len(m.Cells[r]) {
		return m.Cells[r][c]
	}
	return HeatCell{}
}

// heatColor maps t in [0,1] onto the heat stops.
func heatColor(t float64) string {
	t = min(1, max(0, t))
	seg := t * float64(len(heat)-1)
	i := min(int(seg), len(heat)-2)
	f := seg - float64(i)
	var rgb [3]int
	for k := range 3 {
		rgb[k] = int(math.Round(heat[i][k] + f*(heat[i+1][k]-heat[i][k])))
	}
	return fmt.Sprintf("#%02x%02x%02x", rgb[0], rgb[1], rgb[2])
}

// inkOn is a text colour that reads on heatColor(t).
func inkOn(t float64) string {
	if t > 0.45 {
		return "#fff"
	}
	return "#111"
}

// svgBuilder collects SVG text.
type svgBuilder struct{ bytes.Buffer }

func (b *svgBuilder) raw(s string) { b.WriteString(s); b.WriteByte('\n') }

func (b *svgBuilder) f(format string, args ...any) {
	fmt.Fprintf(b, format, args...)
	b.WriteByte('\n')
}

func (b *svgBuilder) open(w, h float64, title string) {
	b.f(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %s %s" width="%s" height="%s" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" role="img">`, n(w), n(h), n(w), n(h))
	b.f(`<title>%s</title>`, esc(title))
}

func (b *svgBuilder) titles(title, note string, w float64) {
	b.f(`<text class="chart-title" x="%s" y="20" font-size="14" font-weight="bold" fill="#111">%s</text>`, n(marginLeft-48), esc(title))
	if note != "" {
		b.f(`<text class="chart-note" x="%s" y="36" font-size="11" fill="#a33">%s</text>`, n(marginLeft-48), esc(note))
	}
}

func (b *svgBuilder) close() { b.raw(`</svg>`) }

// niceTicks returns 4–6 round ticks from at most lo to at least hi.
func niceTicks(lo, hi float64) []float64 {
	if !(hi > lo) {
		if hi == 0 {
			hi = lo + 1
		} else {
			lo, hi = min(0, lo), max(0, hi)
			if hi == lo {
				hi = lo + 1
			}
		}
	}
	return niceTicksStep(lo, hi, niceStep((hi-lo)/4))
}

// niceTicksStep returns ticks step apart from at most lo to at least hi.
func niceTicksStep(lo, hi, step float64) []float64 {
	var ts []float64
	for k := math.Floor(lo / step); k*step < hi+step*0.999; k++ {
		// Round away float noise (3 × 0.2 = 0.6000000000000001).
		v, _ := strconv.ParseFloat(strconv.FormatFloat(k*step, 'g', 12, 64), 64)
		ts = append(ts, v)
	}
	return ts
}

// niceStep rounds s up to 1, 2, 2.5 or 5 × 10^k.
func niceStep(s float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(s)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if s <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// decimals is how many decimals tell the ticks apart.
func decimals(ts []float64) int {
	d := 0
	for _, t := range ts {
		for d < 6 && math.Abs(t-roundTo(t, d)) > 1e-9*max(1, math.Abs(t)) {
			d++
		}
	}
	return d
}

func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// n formats an SVG coordinate: one decimal, no exponent, no "-0".
func n(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if s == "-0.0" {
		return "0.0"
	}
	return s
}

// num formats a figure for a person: up to 4 significant digits, no
// trailing zeros, no exponent for ordinary magnitudes.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 0.001:
		s := strconv.FormatFloat(v, 'f', max(0, 3-int(math.Floor(math.Log10(a)))), 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func seriesColor(c string, i int) string {
	if c != "" {
		return esc(c)
	}
	return palette[i%len(palette)]
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// esc escapes text for SVG (XML) content and attributes.
func esc(s string) string { return xmlEscaper.Replace(s) }
