package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Point is one measurement of a series.
type Point struct {
	X, Y float64
	// Lo and Hi, when Hi > Lo, are the spread drawn as an error bar
	// around Y: the least and greatest of the passes.
	Lo, Hi float64
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
	// Marker is the point shape (Markers); Dash the line's
	// stroke-dasharray ("solid" for none). Empty takes the entry of the
	// series' position, so no two series of a chart look alike even in
	// one colour, and a series drawn exactly over another still shows.
	Marker, Dash string
}

// Markers are the point shapes, in series order; the first is filled,
// the others hollow and larger, so an earlier series' mark shows inside
// a later one's where they coincide.
var Markers = []string{"circle", "square", "triangle", "diamond", "down", "cross"}

// dashes are the line patterns, in series order: the first solid and
// widest, drawn first, so a later dashed line over it leaves it visible
// in its gaps and along its edges.
var dashes = []string{"solid", "7 4", "2 3", "10 3 2 3", "4 2 1 2", "1 3"}

// LineChart draws series of points against a shared x axis: one polyline,
// one marker per point and, where a point has a spread, an error bar, for
// each series; axis titles, tick labels and a legend. A series with no
// points keeps its legend entry and draws nothing.
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
	// SpreadLabel names the error bars in the legend ("min–max of 5
	// passes"); empty gives "min–max".
	SpreadLabel string
	Series      []Series
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

// plot is a chart's drawing area and its scales.
type plot struct {
	w, h           float64
	x0, x1, y0, y1 float64 // y0 is the bottom
	xpos, ypos     func(float64) float64
	xticks, yticks []float64
	top            float64
}

// SVG renders the chart.
func (c LineChart) SVG() []byte {
	p := c.plot()
	legend, rows := legendLayout(c.legendNames(), p.x0, p.x1, p.y0+52)
	p.h += 14 * float64(rows-1)
	var b svgBuilder
	b.open(p.w, p.h, c.Title)
	b.titles(c.Title, c.Note, p.w)
	c.axes(&b, p)
	b.raw(`<g class="lines">`)
	for i, s := range c.Series {
		c.line(&b, p, i, s)
	}
	b.raw(`</g>`)
	// Marks last, the first series on top: its filled marks sit inside
	// the later series' hollow ones where they coincide.
	for i := len(c.Series) - 1; i >= 0; i-- {
		c.marks(&b, p, i, c.Series[i])
	}
	c.legend(&b, legend)
	b.close()
	return b.Bytes()
}

func (c LineChart) usable(pt Point) bool {
	return finite(pt.X) && finite(pt.Y) && (!c.LogX || pt.X > 0)
}

func (c LineChart) hasSpread() bool {
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if c.usable(pt) && finite(pt.Lo) && finite(pt.Hi) && pt.Hi > pt.Lo {
				return true
			}
		}
	}
	return false
}

// plot lays the axes out over the data: x ticks at every level (log) or
// round ones, y from 0 to a round top above the data and its spread.
func (c LineChart) plot() plot {
	p := plot{w: float64(or(c.Width, 560)), h: float64(or(c.Height, 320))}
	p.x0, p.x1 = marginLeft, p.w-marginRight
	p.y0, p.y1 = p.h-marginBottom, marginTop
	var xs []float64
	ymax := 0.0
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if !c.usable(pt) {
				continue
			}
			xs = append(xs, pt.X)
			ymax = max(ymax, pt.Y)
			if finite(pt.Hi) && pt.Hi > pt.Lo {
				ymax = max(ymax, pt.Hi)
			}
		}
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	p.xpos = func(float64) float64 { return (p.x0 + p.x1) / 2 }
	if len(xs) > 0 {
		lo, hi := xs[0], xs[len(xs)-1]
		f := func(v float64) float64 { return v }
		if c.LogX {
			f = math.Log2
			p.xticks = xs
		} else {
			p.xticks = niceTicks(lo, hi)
			lo, hi = min(lo, p.xticks[0]), max(hi, p.xticks[len(p.xticks)-1])
		}
		if hi > lo {
			flo, fhi := f(lo), f(hi)
			p.xpos = func(v float64) float64 { return p.x0 + (f(v)-flo)/(fhi-flo)*(p.x1-p.x0) }
		}
	}
	p.top = c.YMax
	if p.top <= 0 {
		p.top = ymax
	}
	if c.YIntegers {
		p.top = max(p.top, 1)
	}
	p.yticks = niceTicks(0, p.top)
	if c.YIntegers {
		p.yticks = intTicks(p.top)
	}
	if c.YMax > 0 {
		p.yticks = slices.DeleteFunc(p.yticks, func(v float64) bool { return v > c.YMax+1e-12 })
	} else {
		p.top = p.yticks[len(p.yticks)-1]
	}
	p.ypos = func(v float64) float64 { return p.y0 - min(v, p.top)/p.top*(p.y0-p.y1) }
	return p
}

// axes draws the grid, the ticks and the axis titles.
func (c LineChart) axes(b *svgBuilder, p plot) {
	ydec := decimals(p.yticks)
	b.raw(`<g class="axis y-axis" font-size="11" fill="#333">`)
	for _, t := range p.yticks {
		y := p.ypos(t)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`, n(p.x0), n(y), n(p.x1), n(y))
		label := strconv.FormatFloat(t, 'f', ydec, 64)
		if c.YPercent {
			label = strconv.FormatFloat(100*t, 'f', max(0, ydec-2), 64) + "%"
		}
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, n(p.x0-6), n(y+4), esc(label))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`,
		n(16), n((p.y0+p.y1)/2), n(16), n((p.y0+p.y1)/2), esc(c.YLabel))
	b.raw(`</g>`)
	b.raw(`<g class="axis x-axis" font-size="11" fill="#333">`)
	b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, n(p.x0), n(p.y0), n(p.x1), n(p.y0))
	xdec := decimals(p.xticks)
	for _, t := range p.xticks {
		x := p.xpos(t)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, n(x), n(p.y0), n(x), n(p.y0+4))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, n(x), n(p.y0+17), strconv.FormatFloat(t, 'f', xdec, 64))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, n((p.x0+p.x1)/2), n(p.y0+34), esc(c.XLabel))
	b.raw(`</g>`)
}

// style is series i's colour, dash pattern, line width and marker.
func (c LineChart) style(i int) (col, dash string, width float64, marker string) {
	s := c.Series[i]
	col = seriesColor(s.Color, i)
	dash = s.Dash
	if dash == "" {
		dash = dashes[i%len(dashes)]
	}
	marker = s.Marker
	if !slices.Contains(Markers, marker) {
		marker = Markers[i%len(Markers)]
	}
	return col, dash, max(1.5, 3-0.5*float64(i)), marker
}

func dashAttr(dash string) string {
	if dash == "solid" {
		return ""
	}
	return ` stroke-dasharray="` + esc(dash) + `"`
}

// line draws series i's polyline and its error bars, the bars nudged
// sideways per series so that coinciding ones stay apart.
func (c LineChart) line(b *svgBuilder, p plot, i int, s Series) {
	col, dash, width, _ := c.style(i)
	b.f(`<g class="series" data-series="%s">`, esc(s.Name))
	var pts []string
	nudge := 3 * (float64(i) - float64(len(c.Series)-1)/2)
	for _, pt := range s.Points {
		if !c.usable(pt) {
			continue
		}
		x, y := p.xpos(pt.X), p.ypos(pt.Y)
		pts = append(pts, n(x)+","+n(y))
		if finite(pt.Lo) && finite(pt.Hi) && pt.Hi > pt.Lo {
			bx, lo, hi := x+nudge, p.ypos(pt.Lo), p.ypos(pt.Hi)
			b.f(`<path class="spread" d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="%s" stroke-width="1.3" fill="none"/>`,
				n(bx), n(lo), n(hi), n(bx-3), n(lo), n(bx+3), n(bx-3), n(hi), n(bx+3), col)
		}
	}
	b.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="%s"%s/>`, strings.Join(pts, " "), col, n(width), dashAttr(dash))
	b.raw(`</g>`)
}

// marks draws series i's markers with their hover text.
func (c LineChart) marks(b *svgBuilder, p plot, i int, s Series) {
	col, _, _, marker := c.style(i)
	b.f(`<g class="marks" data-series="%s">`, esc(s.Name))
	for _, pt := range s.Points {
		if !c.usable(pt) {
			continue
		}
		tip := pt.Tip
		if tip == "" {
			tip = num(pt.X) + ": " + num(pt.Y)
		}
		b.raw(markerSVG(marker, i == 0, p.xpos(pt.X), p.ypos(pt.Y), col, `class="point"`, esc(s.Name+", "+tip)))
	}
	b.raw(`</g>`)
}

// markerSVG is one marker: filled and small, or hollow and larger.
func markerSVG(shape string, filled bool, x, y float64, col, attrs, title string) string {
	r, fill, stroke := 5.0, "none", ` stroke="`+col+`" stroke-width="1.8"`
	if filled {
		r, fill, stroke = 3.8, col, ""
	}
	var el string
	switch shape {
	case "square":
		el = fmt.Sprintf(`<rect %s x="%s" y="%s" width="%s" height="%s" fill="%s"%s>`, attrs, n(x-r*0.85), n(y-r*0.85), n(1.7*r), n(1.7*r), fill, stroke)
		return el + "<title>" + title + "</title></rect>"
	case "circle":
		el = fmt.Sprintf(`<circle %s cx="%s" cy="%s" r="%s" fill="%s"%s>`, attrs, n(x), n(y), n(r), fill, stroke)
		return el + "<title>" + title + "</title></circle>"
	}
	var d string
	switch shape {
	case "triangle":
		d = fmt.Sprintf("M%s %sL%s %sL%s %sZ", n(x), n(y-1.2*r), n(x+r), n(y+0.7*r), n(x-r), n(y+0.7*r))
	case "down":
		d = fmt.Sprintf("M%s %sL%s %sL%s %sZ", n(x), n(y+1.2*r), n(x+r), n(y-0.7*r), n(x-r), n(y-0.7*r))
	case "diamond":
		d = fmt.Sprintf("M%s %sL%s %sL%s %sL%s %sZ", n(x), n(y-1.2*r), n(x+r), n(y), n(x), n(y+1.2*r), n(x-r), n(y))
	default: // cross
		d = fmt.Sprintf("M%s %sL%s %sM%s %sL%s %s", n(x-r), n(y-r), n(x+r), n(y+r), n(x-r), n(y+r), n(x+r), n(y-r))
		fill, stroke = "none", ` stroke="`+col+`" stroke-width="2"`
	}
	return fmt.Sprintf(`<path %s d="%s" fill="%s"%s><title>%s</title></path>`, attrs, d, fill, stroke, title)
}

// legendNames are the legend's entries: the series, then the error bars'
// entry when any point has a spread.
func (c LineChart) legendNames() []string {
	var names []string
	for _, s := range c.Series {
		names = append(names, s.Name)
	}
	if c.hasSpread() {
		names = append(names, c.spreadLabel())
	}
	return names
}

func (c LineChart) spreadLabel() string {
	if c.SpreadLabel != "" {
		return c.SpreadLabel
	}
	return "min–max"
}

// legend draws each series' line sample with its dash and marker, then the
// error bars' entry.
func (c LineChart) legend(b *svgBuilder, entries []legendEntry) {
	b.raw(`<g class="legend" font-size="11" fill="#333">`)
	for i, e := range entries {
		if i == len(c.Series) { // the spread's entry
			x, y := e.x+11, e.y-4
			b.f(`<path class="spread" d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="#555" stroke-width="1.3" fill="none"/>`,
				n(x), n(y-6), n(y+5), n(x-3), n(y-6), n(x+3), n(x-3), n(y+5), n(x+3))
			b.f(`<text x="%s" y="%s">%s</text>`, n(e.x+27), n(e.y), esc(c.spreadLabel()))
			continue
		}
		col, dash, width, marker := c.style(i)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`, n(e.x), n(e.y-4), n(e.x+22), n(e.y-4), col, n(width), dashAttr(dash))
		b.raw(markerSVG(marker, i == 0, e.x+11, e.y-4, col, `class="legend-mark"`, esc(c.Series[i].Name)))
		b.f(`<text x="%s" y="%s">%s</text>`, n(e.x+27), n(e.y), esc(c.Series[i].Name))
	}
	b.raw(`</g>`)
}

type legendEntry struct{ x, y float64 }

// legendLayout places one legend entry per name, left to right, wrapping
// into a new row when a name would pass x1.
func legendLayout(names []string, x0, x1, y float64) ([]legendEntry, int) {
	var out []legendEntry
	x, rows := x0, 1
	for _, name := range names {
		width := 27 + 6.5*float64(len([]rune(name)))
		if x > x0 && x+width > x1 {
			x, y, rows = x0, y+14, rows+1
		}
		out = append(out, legendEntry{x, y})
		x += width + 18
	}
	return out, rows
}
