package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBrowserRendersReport renders the golden pair's page in a real
// headless Chromium, 1280 px wide, and checks the screenshot: ink on the
// page, the baseline's and the candidate's line colours, and the verdict
// banner's colour in the first screenful (the verdict comes first). A
// measuring script run on a copy of the page (the report itself has no
// script) checks that no table is wider than its box at 1280 px. The
// controls: a blank page reads as blank, the page without its charts shows
// no curves, and a page with a table too wide is caught. Needs chromium on
// PATH (.ci/run installs Debian's); under CI=true its absence fails.
// VETBENCH_BROWSER_CHECK_OUT=file.png keeps the screenshot.
func TestBrowserRendersReport(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs chromium (.ci/run installs it): %v", err)
		}
		t.Skip("chromium is not on PATH (apt-get install chromium)")
	}
	dir := t.TempDir()
	rep := build(t, load(t, "base", "baseline"), load(t, "cand", "candidate"))
	var page bytes.Buffer
	require.NoError(t, rep.WriteHTML(&page))
	pagePath := filepath.Join(dir, "pair.html")
	require.NoError(t, os.WriteFile(pagePath, page.Bytes(), 0o644))
	blankPath := filepath.Join(dir, "blank.html")
	require.NoError(t, os.WriteFile(blankPath, []byte("<!DOCTYPE html><html><body></body></html>"), 0o644))

	shot := screenshot(t, bin, pagePath)
	if out := os.Getenv("VETBENCH_BROWSER_CHECK_OUT"); out != "" {
		var b bytes.Buffer
		require.NoError(t, png.Encode(&b, shot))
		require.NoError(t, os.WriteFile(out, b.Bytes(), 0o644))
		t.Logf("screenshot in %s", out)
	}
	ink, base, cand := inkOf(shot)
	t.Logf("ink %.1f%% of the page; %d baseline-blue and %d candidate-orange pixels", 100*ink, base, cand)
	require.Greater(t, ink, 0.05, "the page rendered next to nothing")
	require.Greater(t, base, 500, "no baseline curve (#0072b2) on the page")
	require.Greater(t, cand, 500, "no candidate curve (#d55e00) on the page")
	require.Greater(t, bannerPixels(shot, 400), 2000, "no verdict banner (#fdecea, the failing pair's) in the first 400 px")

	ink, base, cand = inkOf(screenshot(t, bin, blankPath))
	require.Less(t, ink, 0.001, "control: a blank page must read as blank")
	require.Zero(t, base+cand)

	require.Empty(t, overflowing(t, bin, page.String()), "tables wider than their box at 1280 px")
	wide := strings.Replace(page.String(), "<caption>Verdicts</caption>", `<caption>Verdicts</caption><tr><td style="white-space:nowrap">`+strings.Repeat("wide ", 400)+`</td></tr>`, 1)
	require.NotEmpty(t, overflowing(t, bin, wide), "control: a table too wide must be caught")

	// A baseline exactly under its candidate still shows (its solid wider
	// line in the dashes' gaps, its filled marks inside the hollow ones);
	// the control: the candidate alone leaves no baseline blue.
	under, alone := overlapPages(t, dir)
	_, base, cand = inkOf(screenshot(t, bin, under))
	t.Logf("overlapping: %d baseline-blue and %d candidate-orange pixels", base, cand)
	require.Greater(t, base, 300, "a baseline exactly under its candidate is hidden")
	require.Greater(t, cand, 300)
	_, base, _ = inkOf(screenshot(t, bin, alone))
	require.Less(t, base, 20, "control: no baseline, no baseline blue")

	// Control: the same page without its charts has ink but no curves.
	for i := range rep.Sections {
		rep.Sections[i].Charts = nil
	}
	page.Reset()
	require.NoError(t, rep.WriteHTML(&page))
	require.NoError(t, os.WriteFile(pagePath, page.Bytes(), 0o644))
	ink, base, cand = inkOf(screenshot(t, bin, pagePath))
	require.Greater(t, ink, 0.05)
	require.Less(t, base, 500, "control: the curve check must not fire without charts")
	require.Less(t, cand, 500)
}

// overlapPages writes a page whose one chart has a candidate drawn
// exactly over its baseline, and the same page without the baseline.
func overlapPages(t *testing.T, dir string) (under, alone string) {
	t.Helper()
	pts := []Point{{X: 1, Y: 0.58}, {X: 4, Y: 0.58}, {X: 16, Y: 0.57}, {X: 32, Y: 0.22}}
	ch := LineChart{Title: "hit rates", LogX: true, YMax: 1, YPercent: true, Series: []Series{
		{Name: "baseline", Color: "#0072b2", Points: pts}, {Name: "candidate", Color: "#d55e00", Points: pts}}}
	write := func(name string, ch LineChart) string {
		var b bytes.Buffer
		require.NoError(t, (&Report{Title: "overlap", Sections: []Section{{ID: "x", Charts: []Chart{ch}}}}).WriteHTML(&b))
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
		return path
	}
	under = write("under.html", ch)
	ch.Series = ch.Series[1:]
	// Keep the candidate's own style: it is the second series.
	ch.Series[0].Dash, ch.Series[0].Marker = "7 4", "square"
	return under, write("alone.html", ch)
}

// overflowing loads html with a measuring script added at its end in a
// 1280 px window and returns the captions of the tables whose content is
// wider than their box (what a reader would have to scroll sideways for),
// from the DOM Chromium dumps after the script ran.
func overflowing(t *testing.T, bin, html string) string {
	t.Helper()
	script := `<script>var bad=[];document.querySelectorAll("div.table").forEach(function(d){if(d.scrollWidth>d.clientWidth+1||d.getBoundingClientRect().right>1280){var c=d.querySelector("caption");bad.push(c?c.textContent:"?")}});if(document.documentElement.scrollWidth>1280){bad.push("page")}document.body.setAttribute("data-overflow",bad.join("|"))</script>`
	path := filepath.Join(t.TempDir(), "measure.html")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(html, "</body>", script+"</body>", 1)), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+t.TempDir(),
		"--window-size=1280,2400", "--dump-dom", "file://"+path).Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`data-overflow="([^"]*)"`).FindSubmatch(out)
	require.NotNil(t, m, "the measuring script did not run")
	return string(m[1])
}

// bannerPixels counts pixels of the failing banner's background in the
// top rows of img.
func bannerPixels(img image.Image, rows int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Min.Y+rows && y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 0xfd && g>>8 == 0xec && bl>>8 == 0xea {
				n++
			}
		}
	}
	return n
}

func screenshot(t *testing.T, bin, page string) image.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "shot.png")
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--window-size=1280,2400", "--screenshot="+out, "file://"+page)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "chromium: %s", msg)
	f, err := os.Open(out)
	require.NoError(t, err, "chromium wrote no screenshot: %s", msg)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, image.Pt(1280, 2400), img.Bounds().Size(), fmt.Sprintf("chromium: %s", msg))
	return img
}

// inkOf returns the share of pixels that are not near white, and how
// many pixels are close to the baseline and candidate line colours.
func inkOf(img image.Image) (ink float64, base, cand int) {
	b := img.Bounds()
	near := func(r, g, bl uint32, want [3]uint32) bool {
		d := func(x, y uint32) uint32 {
			if x > y {
				return x - y
			}
			return y - x
		}
		return d(r, want[0])+d(g, want[1])+d(bl, want[2]) < 40
	}
	var dark int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 235 || g < 235 || bl < 235 {
				dark++
			}
			if near(r, g, bl, [3]uint32{0x00, 0x72, 0xb2}) {
				base++
			}
			if near(r, g, bl, [3]uint32{0xd5, 0x5e, 0x00}) {
				cand++
			}
		}
	}
	return float64(dark) / float64(b.Dx()*b.Dy()), base, cand
}
