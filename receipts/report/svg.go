package report

import (
	"bytes"
	"fmt"
	"math"
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

// heatGeom is a heat map's layout and colour range, fixed before drawing.
type heatGeom struct {
	cellW, w, h, gridTop float64
	// lo and hi are the lowest and highest usable values; lo > hi when
	// there is none.
	lo, hi float64
}

// The heat map's fixed dimensions in px.
const heatCellH, heatRowLabelW, heatTop, heatColLabelH = 44.0, 96.0, 48.0, 36.0

// SVG renders the heat map.
func (m HeatMap) SVG() []byte {
	g := m.geom()
	var b svgBuilder
	b.open(g.w, g.h, m.Title)
	b.titles(m.Title, m.Note, g.w)
	m.axes(&b, g)
	m.cells(&b, g)
	m.legend(&b, g)
	b.close()
	return b.Bytes()
}

// geom sizes the map and finds its colour range.
func (m HeatMap) geom() heatGeom {
	// Wide enough for the longest status ("Requests queued") at 10 px.
	cellW := 80.0
	for r := range m.Rows {
		for c := range m.Cols {
			cellW = max(cellW, 5.8*float64(utf8.RuneCountInString(m.cell(r, c).Status))+14)
		}
	}
	if m.Width > 0 && len(m.Cols) > 0 {
		cellW = max(40, (float64(m.Width)-heatRowLabelW-16)/float64(len(m.Cols)))
	}
	g := heatGeom{cellW: cellW, gridTop: heatTop + heatColLabelH, lo: math.Inf(1), hi: math.Inf(-1)}
	// Wide enough for the colour legend's "not measured" too.
	g.w = max(heatRowLabelW+cellW*float64(len(m.Cols))+16, heatRowLabelW+350)
	g.h = g.gridTop + heatCellH*float64(len(m.Rows)) + 56
	for r := range m.Rows {
		for c := range m.Cols {
			if v := m.cell(r, c).Value; m.usable(v) {
				g.lo, g.hi = min(g.lo, *v), max(g.hi, *v)
			}
		}
	}
	return g
}

// usable reports whether v can be coloured.
func (m HeatMap) usable(v *float64) bool {
	return v != nil && finite(*v) && (!m.LogColor || *v > 0)
}

// scale is the colour axis: log(v) under LogColor, else v.
func (m HeatMap) scale(v float64) float64 {
	if m.LogColor {
		return math.Log(v)
	}
	return v
}

// axes draws the axis titles and the row and column labels.
func (m HeatMap) axes(b *svgBuilder, g heatGeom) {
	b.raw(`<g class="axis" font-size="11" fill="#333">`)
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, n(heatRowLabelW+g.cellW*float64(len(m.Cols))/2), n(heatTop+12), esc(m.ColLabel))
	for c, name := range m.Cols {
		b.f(`<text class="col-label" x="%s" y="%s" text-anchor="middle">%s</text>`, n(heatRowLabelW+g.cellW*(float64(c)+0.5)), n(g.gridTop-6), esc(name))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="start">%s</text>`, n(8), n(g.gridTop-6), esc(m.RowLabel))
	for r, name := range m.Rows {
		b.f(`<text class="row-label" x="%s" y="%s" text-anchor="end">%s</text>`, n(heatRowLabelW-8), n(g.gridTop+heatCellH*(float64(r)+0.5)+4), esc(name))
	}
	b.raw(`</g>`)
}

// cells draws every cell: its colour, value, status and hover text.
func (m HeatMap) cells(b *svgBuilder, g heatGeom) {
	b.raw(`<g class="cells" font-size="11">`)
	for r := range m.Rows {
		for c := range m.Cols {
			m.drawCell(b, g, r, c)
		}
	}
	b.raw(`</g>`)
}

// drawCell draws the cell at row r, column c.
func (m HeatMap) drawCell(b *svgBuilder, g heatGeom, r, c int) {
	cell := m.cell(r, c)
	x, y := heatRowLabelW+g.cellW*float64(c), g.gridTop+heatCellH*float64(r)
	fill, ink, val := "#d9d9d9", "#333", "—"
	if v := cell.Value; m.usable(v) {
		t := 0.5
		if g.hi > g.lo {
			t = (m.scale(*v) - m.scale(g.lo)) / (m.scale(g.hi) - m.scale(g.lo))
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
	b.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#fff"/>`, n(x), n(y), n(g.cellW), n(heatCellH), fill)
	b.f(`<text class="value" x="%s" y="%s" text-anchor="middle" fill="%s" font-weight="bold">%s</text>`, n(x+g.cellW/2), n(y+18), ink, esc(val))
	b.f(`<text class="status" x="%s" y="%s" text-anchor="middle" fill="%s" font-size="10">%s</text>`, n(x+g.cellW/2), n(y+33), ink, esc(cell.Status))
	b.raw(`</g>`)
}

// legend draws the colour legend: five steps from the lowest to the
// highest value, and the grey of "not measured"; none without a value.
func (m HeatMap) legend(b *svgBuilder, g heatGeom) {
	if g.hi < g.lo {
		return
	}
	b.raw(`<g class="legend" font-size="11" fill="#333">`)
	ly := g.h - 34
	for i := range 5 {
		b.f(`<rect x="%s" y="%s" width="28" height="12" fill="%s"/>`, n(heatRowLabelW+28*float64(i)), n(ly), heatColor(float64(i)/4))
	}
	unit := ""
	if m.Unit != "" {
		unit = " " + m.Unit
	}
	b.f(`<text x="%s" y="%s" text-anchor="end">%s</text>`, n(heatRowLabelW-4), n(ly+10), esc(num(g.lo)))
	b.f(`<text x="%s" y="%s">%s</text>`, n(heatRowLabelW+144), n(ly+10), esc(num(g.hi)+unit))
	b.f(`<rect x="%s" y="%s" width="28" height="12" fill="#d9d9d9"/><text x="%s" y="%s">not measured</text>`, n(heatRowLabelW+230), n(ly), n(heatRowLabelW+262), n(ly+10))
	b.raw(`</g>`)
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

// intTicks are 4–6 ticks on whole numbers from 0 to at least top
// (counts): a round step, 2 where it would be 2.5.
func intTicks(top float64) []float64 {
	top = max(top, 1)
	step := niceStep(top / 4)
	switch {
	case step < 1:
		step = 1
	default:
		step = math.Floor(step) // 2.5 → 2
	}
	return niceTicksStep(0, top, step)
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
