package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// node is any XML element, kept whole so tests can walk it.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func parseSVG(t *testing.T, data []byte) node {
	t.Helper()
	var root node
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	require.NoError(t, dec.Decode(&root), "SVG is not well-formed:\n%s", data)
	require.Equal(t, "svg", root.XMLName.Local)
	require.Equal(t, "http://www.w3.org/2000/svg", root.XMLName.Space)
	return root
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all returns every element below n (n included) that matches.
func (n node) all(match func(node) bool) []node {
	var out []node
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(match)...)
	}
	return out
}

func tag(name string) func(node) bool {
	return func(n node) bool { return n.XMLName.Local == name }
}

func class(name string) func(node) bool {
	return func(n node) bool { return strings.Contains(" "+n.attr("class")+" ", " "+name+" ") }
}

func texts(ns []node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, strings.TrimSpace(n.Text))
	}
	return out
}

func TestLineChartStructure(t *testing.T) {
	t.Parallel()
	ch := LineChart{
		Title: "checks: throughput <&>", Note: "time-scaled twin", XLabel: "concurrency", YLabel: "judgments/s", LogX: true,
		Series: []Series{
			{Name: "baseline", Points: []Point{{X: 1, Y: 60}, {X: 4, Y: 90}, {X: 16, Y: 125}, {X: 32, Y: 87}}},
			// NaN and a non-positive x on a log axis are left out, not drawn
			// at a made-up place.
			{Name: "candidate \"slow\"", Points: []Point{{X: 1, Y: 55}, {X: 4, Y: math.NaN()}, {X: 0, Y: 3}, {X: 16, Y: 70}, {X: 32, Y: 75}}},
			{Name: "empty"},
		},
	}
	data := ch.SVG()
	require.Equal(t, data, ch.SVG(), "the same chart must render the same bytes")
	root := parseSVG(t, data)

	series := root.all(class("series"))
	require.Len(t, series, 3)
	wantPoints := []int{4, 3, 0}
	for i, s := range series {
		require.Equal(t, ch.Series[i].Name, s.attr("data-series"))
		lines := s.all(tag("polyline"))
		require.Len(t, lines, 1, "one polyline per series")
		pts := strings.Fields(lines[0].attr("points"))
		require.Len(t, pts, wantPoints[i], "series %s", s.attr("data-series"))
	}
	marks := root.all(class("marks"))
	require.Len(t, marks, 3)
	for i, m := range marks {
		// Drawn last and in reverse, so the first series' marks are on top.
		s := len(marks) - 1 - i
		require.Equal(t, ch.Series[s].Name, m.attr("data-series"))
		require.Len(t, m.all(class("point")), wantPoints[s])
	}
	require.Empty(t, series[0].all(tag("polyline"))[0].attr("stroke-dasharray"), "the first series is solid")
	require.Equal(t, "7 4", series[1].all(tag("polyline"))[0].attr("stroke-dasharray"))

	require.Equal(t, []string{"judgments/s", "concurrency"}, texts(root.all(class("axis-label"))))
	// Log x: one tick per level, evenly spaced by log2.
	xticks := root.all(class("x-axis"))[0].all(class("tick"))
	require.Equal(t, []string{"1", "4", "16", "32"}, texts(xticks))
	x := func(i int) float64 { return atof(t, xticks[i].attr("x")) }
	require.InDelta(t, x(1)-x(0), x(2)-x(1), 0.11, "1→4 and 4→16 are both two doublings")
	require.InDelta(t, (x(2)-x(1))/2, x(3)-x(2), 0.11, "16→32 is one doubling")
	require.Equal(t, []string{"0", "50", "100", "150"}, texts(root.all(class("y-axis"))[0].all(class("tick"))))
	require.Equal(t, "checks: throughput <&>", strings.TrimSpace(root.all(class("chart-title"))[0].Text))
	require.Equal(t, "time-scaled twin", strings.TrimSpace(root.all(class("chart-note"))[0].Text))
	require.Len(t, root.all(class("legend"))[0].all(tag("text")), 3)
	require.NotContains(t, string(data), "e+", "coordinates are fixed-point")
	require.NotContains(t, string(data), "NaN")
}

// TestLineChartYPercentAndIntegers: ratios on a fixed 0–100% axis, counts
// on whole-number ticks.
func TestLineChartYAxes(t *testing.T) {
	t.Parallel()
	pct := parseSVG(t, LineChart{YMax: 1, YPercent: true, Series: []Series{{Name: "prefix", Points: []Point{{X: 1, Y: 0.58}}}}}.SVG())
	require.Equal(t, []string{"0%", "25%", "50%", "75%", "100%"}, texts(pct.all(class("y-axis"))[0].all(class("tick"))))
	cnt := parseSVG(t, LineChart{YIntegers: true, Series: []Series{{Name: "moved", Points: []Point{{X: 1, Y: 0}, {X: 4, Y: 0}}}}}.SVG())
	require.Equal(t, []string{"0", "1"}, texts(cnt.all(class("y-axis"))[0].all(class("tick"))))
}

// TestLegendWraps: names too long for one row go to a second one, and the
// chart grows to hold it.
func TestLegendWraps(t *testing.T) {
	t.Parallel()
	var ss []Series
	for _, name := range []string{"baseline prefix", "baseline mm", "candidate prefix", "candidate mm", "another long series name"} {
		ss = append(ss, Series{Name: name, Points: []Point{{X: 1, Y: 1}}})
	}
	root := parseSVG(t, LineChart{Series: ss}.SVG())
	ys := map[string]bool{}
	for _, tx := range root.all(class("legend"))[0].all(tag("text")) {
		require.Less(t, atof(t, tx.attr("x")), 560.0-16)
		ys[tx.attr("y")] = true
	}
	require.Len(t, ys, 2)
	require.Equal(t, "0 0 560.0 334.0", root.attr("viewBox"))
}

func TestHeatMapStructure(t *testing.T) {
	t.Parallel()
	v := func(x float64) *float64 { return &x }
	statuses := []string{"Valid", "Requests queued", "Looped", "Failed", "Skipped"}
	m := HeatMap{
		Title: "speed matrix", RowLabel: "context", ColLabel: "concurrency", Unit: "tok/s",
		Rows: []string{"1k", "8k", "32k"}, Cols: []string{"1", "4", "16", "32"},
		Cells: [][]HeatCell{
			{{Value: v(40), Status: "Valid"}, {Value: v(150), Status: "Valid"}, {Value: v(480), Status: "Valid"}, {Value: v(800), Status: "Requests queued"}},
			{{Value: v(35), Status: "Valid"}, {Value: v(120), Status: "Looped"}, {Value: v(300), Status: "Valid"}, {Status: "Failed", Tip: "HTTP 500"}},
			{{Value: v(20), Status: "Valid"}, {Value: v(60), Status: "Valid"}, {Status: "Skipped"}}, // the last cell is absent
		},
	}
	data := m.SVG()
	require.Equal(t, data, m.SVG())
	root := parseSVG(t, data)
	cells := root.all(class("cell"))
	require.Len(t, cells, 3*4, "rows × columns cells")
	for _, c := range cells {
		require.Len(t, c.all(tag("rect")), 1)
	}
	require.Equal(t, []string{"1", "4", "16", "32"}, texts(root.all(class("col-label"))))
	require.Equal(t, []string{"1k", "8k", "32k"}, texts(root.all(class("row-label"))))
	require.Equal(t, []string{"concurrency", "context"}, texts(root.all(class("axis-label"))))
	got := texts(root.all(class("status")))
	require.Equal(t, []string{
		"Valid", "Valid", "Valid", "Requests queued",
		"Valid", "Looped", "Valid", "Failed",
		"Valid", "Valid", "Skipped", "",
	}, got)
	for _, s := range statuses {
		require.Contains(t, got, s)
	}
	fill := func(i int) string { return cells[i].all(tag("rect"))[0].attr("fill") }
	require.Equal(t, heatColor(1), fill(3), "the highest value takes the darkest colour")
	require.Equal(t, heatColor(0), fill(8), "the lowest the lightest")
	require.Equal(t, "#d9d9d9", fill(7), "a failed cell with no value is grey")
	require.Equal(t, "#d9d9d9", fill(11), "so is a missing one")
	require.NotEqual(t, fill(0), fill(1))
	require.Equal(t, "800", strings.TrimSpace(cells[3].all(class("value"))[0].Text))
	require.Equal(t, "—", strings.TrimSpace(cells[7].all(class("value"))[0].Text))
	require.Contains(t, cells[7].all(tag("title"))[0].Text, "HTTP 500")
}

// TestHeatMapLogColor: on a log colour scale the geometric middle takes
// the middle colour; cells grow to hold their status.
func TestHeatMapLogColor(t *testing.T) {
	t.Parallel()
	v := func(x float64) *float64 { return &x }
	m := HeatMap{Rows: []string{"r"}, Cols: []string{"a", "b", "c"}, LogColor: true,
		Cells: [][]HeatCell{{{Value: v(10), Status: "Valid"}, {Value: v(100), Status: "Requests queued"}, {Value: v(1000)}}}}
	root := parseSVG(t, m.SVG())
	rects := root.all(class("cell"))
	require.Equal(t, heatColor(0.5), rects[1].all(tag("rect"))[0].attr("fill"))
	require.Greater(t, atof(t, rects[0].all(tag("rect"))[0].attr("width")), 80.0, "wide enough for Requests queued")
	m.LogColor = false
	root = parseSVG(t, m.SVG())
	require.NotEqual(t, heatColor(0.5), root.all(class("cell"))[1].all(tag("rect"))[0].attr("fill"))
}

// TestSVGCatchesBrokenOutput is the control of the structural tests: the
// parser they rely on refuses a cut SVG and unescaped text.
func TestSVGCatchesBrokenOutput(t *testing.T) {
	t.Parallel()
	data := LineChart{Title: "a<b", Series: []Series{{Name: "x", Points: []Point{{X: 1, Y: 1}}}}}.SVG()
	var root node
	require.Error(t, xml.NewDecoder(bytes.NewReader(data[:len(data)/2])).Decode(&root))
	raw := bytes.Replace(data, []byte("a&lt;b"), []byte("a<b"), 1)
	require.Error(t, xml.NewDecoder(bytes.NewReader(raw)).Decode(&root))
}

func TestTicks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 150, []float64{0, 50, 100, 150}},
		{0, 124.9, []float64{0, 50, 100, 150}},
		{0, 0.62, []float64{0, 0.2, 0.4, 0.6, 0.8}},
		{0, 1, []float64{0, 0.25, 0.5, 0.75, 1}},
		{0, 0, []float64{0, 0.25, 0.5, 0.75, 1}},
		{0, 7, []float64{0, 2, 4, 6, 8}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, niceTicks(c.lo, c.hi), "%v..%v", c.lo, c.hi)
	}
	require.Equal(t, "124.9", num(124.94))
	require.Equal(t, "1", num(1))
	require.Equal(t, "0.204", num(0.20401))
	require.Equal(t, "1069", num(1069.4))
	require.Equal(t, "2.5e-05", num(0.000025))
	require.Equal(t, "0.0", n(-0.01))
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	_, err := fmt.Sscan(s, &v)
	require.NoError(t, err)
	return v
}

// TestOverlappingSeriesDistinct: a candidate drawn exactly over its
// baseline still shows the baseline: each series has its own marker shape
// and dash pattern, the first is solid, widest and drawn first (a dashed
// line over it leaves its gaps), its filled marks are drawn last, inside
// the later series' hollow ones; the legend shows each line with its
// marker. Error bars are drawn only where a point has a spread, and
// nudged apart where two coincide.
func TestOverlappingSeriesDistinct(t *testing.T) {
	t.Parallel()
	pts := []Point{{X: 1, Y: 0.58, Lo: 0.5, Hi: 0.6}, {X: 4, Y: 0.58}, {X: 16, Y: 0.58, Lo: 0.55, Hi: 0.62}}
	names := []string{"baseline prefix", "baseline mm", "candidate prefix", "candidate mm"}
	var ss []Series
	for _, name := range names {
		ss = append(ss, Series{Name: name, Points: pts})
	}
	root := parseSVG(t, LineChart{LogX: true, YMax: 1, YPercent: true, Series: ss}.SVG())
	lines := root.all(class("series"))
	require.Len(t, lines, 4)
	var dashes, widths, shapes []string
	for i, l := range lines {
		require.Equal(t, names[i], l.attr("data-series"), "lines in series order")
		pl := l.all(tag("polyline"))[0]
		dashes = append(dashes, pl.attr("stroke-dasharray"))
		widths = append(widths, pl.attr("stroke-width"))
		require.Len(t, l.all(class("spread")), 2, "bars at the two points with a spread")
	}
	require.Equal(t, []string{"", "7 4", "2 3", "10 3 2 3"}, dashes)
	require.Equal(t, []string{"3.0", "2.5", "2.0", "1.5"}, widths)
	bx := func(i int) string { return strings.Fields(lines[i].all(class("spread"))[0].attr("d"))[0] }
	require.NotEqual(t, bx(0), bx(2), "coinciding bars are nudged apart")
	marks := root.all(class("marks"))
	require.Equal(t, names[0], marks[len(marks)-1].attr("data-series"), "the first series' marks are drawn last")
	for _, m := range marks {
		p := m.all(class("point"))
		require.Len(t, p, 3)
		shapes = append(shapes, p[0].XMLName.Local+" "+p[0].attr("fill"))
	}
	require.Equal(t, []string{"path none", "path none", "rect none", "circle #0072b2"}, shapes, "hollow later series, the first filled")
	legend := root.all(class("legend"))[0]
	require.Len(t, legend.all(class("legend-mark")), 4)
	require.Equal(t, append(names, "min–max"), texts(legend.all(tag("text"))))
	require.Len(t, legend.all(class("spread")), 1)
}

// TestBarChartStacks: each bar stacks its kinds bottom first, with the
// counts, the totals above and the group letters below; the legend names
// each kind with its total and each letter's group. Zero segments draw
// nothing but the bar keeps its total.
func TestBarChartStacks(t *testing.T) {
	t.Parallel()
	ch := BarChart{Title: "moved", Stack: []StackKind{{"confident", "#b2182b"}, {"near-tie", "#f0b74a"}},
		Bars: []Bar{
			{Category: "1", Group: "cand vs base", Values: []float64{0, 0}},
			{Category: "4", Group: "cand vs base", Values: []float64{2, 8}},
			{Category: "4", Group: "base vs c=1", Values: []float64{0, 5}},
		}}
	data := ch.SVG()
	require.Equal(t, data, ch.SVG())
	root := parseSVG(t, data)
	bars := root.all(class("bar"))
	require.Len(t, bars, 3)
	seg := func(b node) []string {
		var out []string
		for _, s := range b.all(class("segment")) {
			out = append(out, s.attr("data-kind")+"="+s.attr("data-value"))
		}
		return out
	}
	require.Empty(t, seg(bars[0]))
	require.Equal(t, []string{"confident=2", "near-tie=8"}, seg(bars[1]))
	require.Equal(t, []string{"near-tie=5"}, seg(bars[2]))
	require.Equal(t, []string{"0", "10", "5"}, texts(root.all(class("total"))))
	require.Equal(t, []string{"A", "A", "B"}, texts(root.all(class("group"))))
	c, nt := bars[1].all(class("segment"))[0], bars[1].all(class("segment"))[1]
	require.Greater(t, atof(t, c.attr("y")), atof(t, nt.attr("y")), "confident at the bottom")
	require.Equal(t, []string{"confident: 2", "near-tie: 13", "A = cand vs base", "B = base vs c=1"}, texts(root.all(class("legend"))[0].all(tag("text"))))
	require.Equal(t, []string{"0", "2", "4", "6", "8", "10"}, texts(root.all(class("y-axis"))[0].all(class("tick"))), "whole-number ticks")
}
