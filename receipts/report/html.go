package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteHTML writes the report as one self-contained HTML page: inline CSS
// and SVG, no script, no font or image fetched from anywhere.
func (r *Report) WriteHTML(w io.Writer) error {
	if err := r.check(); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, r); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// File is one CSV file of a report.
type File struct {
	Name string
	Data []byte
}

// CSVFiles returns every table with a CSV name as a CSV file (a header
// row, then the rows; numbers at full precision), in page order, and the
// warnings as warnings.csv.
func (r *Report) CSVFiles() ([]File, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	var out []File
	for _, s := range r.Sections {
		for _, t := range s.Tables {
			if t.CSV == "" {
				continue
			}
			var buf bytes.Buffer
			cw := csv.NewWriter(&buf)
			cw.Write(cellsSafe(slices.Clone(t.Header)))
			for _, row := range t.Rows {
				rec := make([]string, len(row))
				for i, c := range row {
					rec[i] = c.Text
					if c.Raw != "" {
						rec[i] = c.Raw
					}
				}
				cw.Write(cellsSafe(rec))
			}
			cw.Flush()
			if err := cw.Error(); err != nil {
				return nil, fmt.Errorf("report: %s: %w", t.CSV, err)
			}
			out = append(out, File{Name: t.CSV, Data: buf.Bytes()})
		}
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write([]string{"warning"})
	for _, w := range r.Warnings {
		cw.Write([]string{cellSafe(w)})
	}
	cw.Flush()
	out = append(out, File{Name: "warnings.csv", Data: buf.Bytes()})
	return out, nil
}

// cellsSafe makes each cell of rec safe to open in a spreadsheet
// (cellSafe), in place, and returns rec.
func cellsSafe(rec []string) []string {
	for i, c := range rec {
		rec[i] = cellSafe(c)
	}
	return rec
}

// cellSafe is c with a leading ' when a spreadsheet would read it as a
// formula or a DDE command (it starts with =, +, -, @, TAB or CR: OWASP's
// CSV injection rule) and it is not a number: a report's cells hold what
// servers and receipts say (a model name, a server build, a message).
func cellSafe(c string) string {
	if c == "" || !strings.ContainsRune("=+-@\t\r", rune(c[0])) {
		return c
	}
	if _, err := strconv.ParseFloat(c, 64); err == nil {
		return c
	}
	return "'" + c
}

// check refuses what would make a broken page or clobbering files:
// duplicate section ids or CSV names, CSV names that are paths.
func (r *Report) check() error {
	ids := map[string]bool{"warnings": true}
	names := map[string]bool{"warnings.csv": true}
	for _, s := range r.Sections {
		if s.ID == "" || ids[s.ID] {
			return fmt.Errorf("report: section %q: empty or duplicate id %q", s.Title, s.ID)
		}
		ids[s.ID] = true
		for _, t := range s.Tables {
			if t.CSV == "" {
				continue
			}
			if names[t.CSV] || filepath.Base(t.CSV) != t.CSV || !strings.HasSuffix(t.CSV, ".csv") {
				return fmt.Errorf("report: section %s: CSV name %q is a duplicate or not a plain *.csv name", s.ID, t.CSV)
			}
			names[t.CSV] = true
			for i, row := range t.Rows {
				if len(row) != len(t.Header) {
					return fmt.Errorf("report: %s row %d has %d cells for %d columns", t.CSV, i, len(row), len(t.Header))
				}
			}
		}
	}
	return nil
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"svg": func(c Chart) template.HTML {
		// The renderers escape every text they write (esc).
		return template.HTML(c.SVG())
	},
	// Short cells (numbers, labels) do not wrap; long ones (messages) do.
	"cellClass": func(c Cell) string {
		cls := string(c.Tone)
		if utf8.RuneCountInString(c.Text) <= 24 {
			cls = strings.TrimSpace(cls + " n")
		}
		return cls
	},
}).Parse(pageTemplate))

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="vetbench report">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111; background: #fff; margin: 0 auto; padding: 16px 24px 48px; max-width: 1180px; font-size: 14px; line-height: 1.4; }
h1 { font-size: 22px; margin: 8px 0 2px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-top: 8px; border-top: 1px solid #ddd; }
.sub { color: #555; margin: 0 0 8px; font-family: ui-monospace, monospace; font-size: 12px; }
nav { font-size: 13px; margin: 4px 0 12px; }
nav a { margin-right: 12px; color: #0b57a4; text-decoration: none; }
.banner { border: 2px solid; border-radius: 6px; padding: 8px 12px; margin: 12px 0; }
.banner ul { margin: 4px 0 0; padding-left: 20px; }
.banner.bad { border-color: #b3261e; background: #fdecea; }
.banner.warn { border-color: #a86b00; background: #fff4de; }
.banner.ok { border-color: #1e7b34; background: #e8f5eb; }
.note { color: #444; margin: 4px 0; }
.charts { display: flex; flex-wrap: wrap; gap: 8px 16px; }
figure { margin: 0; }
svg.chart { max-width: 100%; height: auto; border: 1px solid #eee; background: #fff; }
.table { overflow-x: auto; margin: 12px 0; }
table { border-collapse: collapse; font-size: 12px; }
caption { text-align: left; font-weight: bold; padding: 4px 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.ok { background: #e8f5eb; color: #14532d; }
td.warn { background: #fff4de; color: #6b4500; }
td.bad { background: #fdecea; color: #8a1c15; font-weight: 600; }
td.none { color: #666; font-style: italic; }
td.n { white-space: nowrap; }
footer { margin-top: 32px; color: #777; font-size: 12px; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p class="sub">{{.Subtitle}}</p>
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}<a href="#warnings">Warnings ({{len .Warnings}})</a></nav>
</header>
{{range .Banners}}{{template "banner" .}}{{end}}
{{range .Sections}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{range .Banners}}{{template "banner" .}}{{end}}
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{if .Charts}}<div class="charts">
{{range .Charts}}<figure>
{{svg .}}</figure>
{{end}}</div>
{{end}}{{range .Tables}}{{if not .CSVOnly}}<div class="table"><table>
<caption>{{.Caption}}</caption>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td{{with cellClass .}} class="{{.}}"{{end}}{{if .Tip}} title="{{.Tip}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{else}}<tr><td class="none" colspan="{{len .Header}}">none</td></tr>
{{end}}</tbody>
</table></div>
{{end}}{{end}}</section>
{{end}}<section id="warnings">
<h2>Warnings ({{len .Warnings}})</h2>
{{if .Warnings}}<ul>
{{range .Warnings}}<li>{{.}}</li>
{{end}}</ul>{{else}}<p class="note">none</p>{{end}}
</section>
<footer>Written by vetbench report from the receipts named above. Decisions are those of receipts/answers (answers), receipts/speed (speed) and the receipts' own self-checks.</footer>
</body>
</html>
{{define "banner"}}<div class="banner {{.Tone}}"><strong>{{.Title}}</strong>{{if .Lines}}<ul>
{{range .Lines}}<li>{{.}}</li>
{{end}}</ul>{{end}}</div>
{{end}}`
