package report

import (
	"fmt"
	"slices"
	"strconv"
)

// BarChart draws stacked bars in groups: one group per category (a
// concurrency level), in each one bar per group name (a comparison), each
// bar the stack of its values in Stack order, bottom first. Bars are
// lettered under the axis (A, B, …) and the legend names the letters, the
// stack's kinds with their colours and each kind's total.
type BarChart struct {
	Title, Note    string
	XLabel, YLabel string
	// Stack are the kinds every bar is made of, bottom first.
	Stack []StackKind
	Bars  []Bar
	// Width in px; 0 gives 560. The height grows with the legend.
	Width int
}

// StackKind is one kind of a stacked bar's segments.
type StackKind struct {
	Name, Color string
}

// Bar is one stacked bar.
type Bar struct {
	Category, Group string
	// Values are per Stack kind; missing ones count 0.
	Values []float64
	// Tip is the bar's hover text.
	Tip string
}

func (c BarChart) categories() (cats, groups []string) {
	for _, b := range c.Bars {
		if !slices.Contains(cats, b.Category) {
			cats = append(cats, b.Category)
		}
		if !slices.Contains(groups, b.Group) {
			groups = append(groups, b.Group)
		}
	}
	return cats, groups
}

func (b Bar) value(i int) float64 {
	if i < len(b.Values) && finite(b.Values[i]) && b.Values[i] > 0 {
		return b.Values[i]
	}
	return 0
}

func (b Bar) total() float64 {
	t := 0.0
	for i := range b.Values {
		t += b.value(i)
	}
	return t
}

// legendNames are the stack kinds with their totals, then the lettered
// groups.
func (c BarChart) legendNames(groups []string) []string {
	var names []string
	for i, k := range c.Stack {
		sum := 0.0
		for _, b := range c.Bars {
			sum += b.value(i)
		}
		names = append(names, fmt.Sprintf("%s: %s", k.Name, num(sum)))
	}
	for i, g := range groups {
		names = append(names, letter(i)+" = "+g)
	}
	return names
}

func letter(i int) string { return string(rune('A' + i%26)) }

// SVG renders the chart.
func (c BarChart) SVG() []byte {
	w := float64(or(c.Width, 560))
	cats, groups := c.categories()
	x0, x1, y1 := marginLeft, w-marginRight, marginTop
	y0 := 320 - marginBottom - 14 // room for the letters under the bars
	names := c.legendNames(groups)
	legend, rows := legendLayout(names, x0, x1, y0+66)
	h := 320 + 14*float64(rows-1)
	top := 1.0
	for _, b := range c.Bars {
		top = max(top, b.total())
	}
	yticks := intTicks(top)
	top = yticks[len(yticks)-1]
	ypos := func(v float64) float64 { return y0 - v/top*(y0-y1) }
	var b svgBuilder
	b.open(w, h, c.Title)
	b.titles(c.Title, c.Note, w)
	c.yAxis(&b, yticks, ypos, x0, x1, y0, y1)
	slot := (x1 - x0) / float64(max(1, len(cats)))
	bw := min(30, 0.8*slot/float64(max(1, len(groups))))
	b.raw(`<g class="axis x-axis" font-size="11" fill="#333">`)
	b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, n(x0), n(y0), n(x1), n(y0))
	for i, cat := range cats {
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, n(x0+slot*(float64(i)+0.5)), n(y0+30), esc(cat))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, n((x0+x1)/2), n(y0+46), esc(c.XLabel))
	b.raw(`</g>`)
	b.raw(`<g class="bars" font-size="10">`)
	for _, bar := range c.Bars {
		ci, gi := slices.Index(cats, bar.Category), slices.Index(groups, bar.Group)
		x := x0 + slot*(float64(ci)+0.5) + bw*(float64(gi)-float64(len(groups))/2)
		c.bar(&b, bar, gi, x, bw, y0, ypos)
	}
	b.raw(`</g>`)
	c.legend(&b, legend, names)
	b.close()
	return b.Bytes()
}

func (c BarChart) yAxis(b *svgBuilder, yticks []float64, ypos func(float64) float64, x0, x1, y0, y1 float64) {
	b.raw(`<g class="axis y-axis" font-size="11" fill="#333">`)
	dec := decimals(yticks)
	for _, t := range yticks {
		y := ypos(t)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`, n(x0), n(y), n(x1), n(y))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, n(x0-6), n(y+4), strconv.FormatFloat(t, 'f', dec, 64))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`,
		n(16), n((y0+y1)/2), n(16), n((y0+y1)/2), esc(c.YLabel))
	b.raw(`</g>`)
}

// bar draws one stacked bar: its segments (with their counts inside when
// there are several and room), the total above, the group's letter below.
func (c BarChart) bar(b *svgBuilder, bar Bar, gi int, x, bw, y0 float64, ypos func(float64) float64) {
	b.f(`<g class="bar" data-category="%s" data-group="%s"><title>%s</title>`, esc(bar.Category), esc(bar.Group), esc(bar.Tip))
	parts := 0
	for i := range c.Stack {
		if bar.value(i) > 0 {
			parts++
		}
	}
	base := 0.0
	for i, k := range c.Stack {
		v := bar.value(i)
		if v == 0 {
			continue
		}
		yt, yb := ypos(base+v), ypos(base)
		b.f(`<rect class="segment" data-kind="%s" data-value="%s" x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#fff"/>`,
			esc(k.Name), num(v), n(x+1), n(yt), n(bw-2), n(yb-yt), esc(k.Color))
		// A segment's own count when the total above does not say it.
		if parts > 1 && yb-yt >= 13 {
			b.f(`<text x="%s" y="%s" text-anchor="middle" fill="%s">%s</text>`, n(x+bw/2), n((yt+yb)/2+3.5), inkFor(k.Color), num(v))
		}
		base += v
	}
	b.f(`<text class="total" x="%s" y="%s" text-anchor="middle" fill="#333">%s</text>`, n(x+bw/2), n(ypos(base)-3), num(base))
	b.f(`<text class="group" x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`, n(x+bw/2), n(y0+13), letter(gi))
	b.raw(`</g>`)
}

func (c BarChart) legend(b *svgBuilder, entries []legendEntry, names []string) {
	b.raw(`<g class="legend" font-size="11" fill="#333">`)
	for i, e := range entries {
		x := e.x
		if i < len(c.Stack) {
			b.f(`<rect x="%s" y="%s" width="18" height="10" fill="%s"/>`, n(e.x+2), n(e.y-9), esc(c.Stack[i].Color))
			x += 27
		}
		b.f(`<text x="%s" y="%s">%s</text>`, n(x), n(e.y), esc(names[i]))
	}
	b.raw(`</g>`)
}

// inkFor is a text colour that reads on a #rrggbb fill.
func inkFor(fill string) string {
	var r, g, bl int
	if _, err := fmt.Sscanf(fill, "#%02x%02x%02x", &r, &g, &bl); err != nil {
		return "#111"
	}
	if 0.299*float64(r)+0.587*float64(g)+0.114*float64(bl) < 140 {
		return "#fff"
	}
	return "#111"
}
