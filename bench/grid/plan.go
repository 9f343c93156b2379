package grid

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/receipts/matrix"
)

// Plan is the grid a matrix will run, known before anything is measured:
// the contexts as they will be after trimming to the server's
// max_model_len (asked contexts that become the same row are merged), the
// levels, what is skipped by rule, and how long it will take.
type Plan struct {
	Rows   []PlanRow
	Levels []int
	// Notice says, a line each, where the grid differs from what was
	// asked (trimmed or merged rows, contexts that cannot fit); empty when
	// it runs as asked.
	Notice []string
	// Cells counts the cells that will run; Skipped those the KV rule or
	// max_model_len skip.
	Cells, Skipped int
	// Prefill counts the prefill rows.
	Prefill int
	Estimate
}

// PlanRow is one row of the plan.
type PlanRow struct {
	// Asked are the contexts that became this row; Tokens the row's
	// context; Label its name.
	Asked  []int
	Tokens int
	Label  string
	// Trimmed: Tokens is below what was asked (max_model_len − output − 64).
	Trimmed bool
	// Cells counts the row's cells that will run (not skipped by rule).
	Cells int
}

// Estimate is how long a matrix takes on the server's clock (model time
// for a time-scaled twin).
type Estimate struct {
	// Least is every cell's window, hold and pause, with no warm-up wait
	// beyond the hold and no prefill time: no run is shorter.
	Least time.Duration
	// Most bounds the cells: window, pause and the longest warm-up a cell
	// may take (its ready timeout, or what the budget leaves it). Prefill
	// rows and scout requests (one prompt's prefill each) come on top.
	Most time.Duration
	// Budget is the stated time for the whole matrix (0: none) and
	// CellWarmup the warm-up each cell may take within it.
	Budget, CellWarmup time.Duration
}

// Plan says what Run will measure with o on this server, without sending
// a request. An error is a bad option or a budget the grid cannot fit.
func (r *Runner) Plan(o Options) (Plan, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return Plan{}, err
	}
	p := Plan{Levels: slices.Clone(o.Levels)}
	var trimmed []string
	for _, want := range o.Contexts {
		tokens, fits := r.fit(want, o.OutputTokens)
		if tokens < 1 {
			p.Notice = append(p.Notice, fmt.Sprintf("context %s does not fit max_model_len %d with output %d: left out", matrix.ContextLabel(want), r.MaxModelLen, o.OutputTokens))
			continue
		}
		label := matrix.ContextLabel(tokens)
		if tokens < want {
			trimmed = append(trimmed, matrix.ContextLabel(want))
		}
		if i := slices.IndexFunc(p.Rows, func(row PlanRow) bool { return row.Label == label }); i >= 0 {
			p.Rows[i].Asked = append(p.Rows[i].Asked, want)
			continue
		}
		p.Rows = append(p.Rows, PlanRow{Asked: []int{want}, Tokens: tokens, Label: label, Trimmed: !fits})
	}
	for i := range p.Rows {
		row := &p.Rows[i]
		if !o.NoPrefill {
			p.Prefill++
			if _, label := askedPrefillContext(*row, r.MaxModelLen); label != "" {
				p.Prefill++ // the asked context's prefill row (askedPrefill)
			}
		}
		for _, c := range o.Levels {
			if CellSkipReason(c, row.Tokens, o.OutputTokens, r.KVTokens, r.MaxModelLen, r.SharedPrefix) != "" {
				p.Skipped++
			} else {
				row.Cells++
			}
		}
		p.Cells += row.Cells
	}
	if len(trimmed) > 0 {
		p.Notice = append([]string{p.trimNotice(trimmed, r.MaxModelLen, o.OutputTokens)}, p.Notice...)
	}
	est, err := estimate(o, p.Rows, p.Cells)
	p.Estimate = est
	return p, err
}

// fit is context trimmed to max_model_len − output − 64 (the peer's
// fit_context); false when it was trimmed.
func (r *Runner) fit(context, output int) (int, bool) {
	if r.MaxModelLen > 0 {
		if room := r.MaxModelLen - output - 64; context > room {
			return room, false
		}
	}
	return context, true
}

func (p Plan) trimNotice(trimmed []string, maxModelLen, output int) string {
	var rows []string
	for _, row := range p.Rows {
		if row.Trimmed {
			rows = append(rows, fmt.Sprintf("%s → %s (%d tokens)", labels(row.Asked), row.Label, row.Tokens))
		}
	}
	what := "contexts " + strings.Join(trimmed, ",") + " are"
	if len(trimmed) == 1 {
		what = "context " + trimmed[0] + " is"
	}
	return fmt.Sprintf("%s over max_model_len %d − output %d − 64 = %d tokens and trimmed to it: %s; the grid that will run is %s",
		what, maxModelLen, output, maxModelLen-output-64, strings.Join(rows, ", "), p.Grid())
}

func labels(asked []int) string {
	var out []string
	for _, a := range asked {
		out = append(out, matrix.ContextLabel(a))
	}
	return strings.Join(out, ",")
}

// Grid is the plan's grid in a line: "3K × c=1,2,4 (3 cells)".
func (p Plan) Grid() string {
	var rows, levels []string
	for _, row := range p.Rows {
		rows = append(rows, row.Label)
	}
	for _, c := range p.Levels {
		levels = append(levels, strconv.Itoa(c))
	}
	n := len(p.Rows) * len(p.Levels)
	s := fmt.Sprintf("%s × c=%s (%d %s", strings.Join(rows, ","), strings.Join(levels, ","), n, plural(n, "cell"))
	if p.Skipped > 0 {
		s += fmt.Sprintf(", %d of them skipped by the KV rule", p.Skipped)
	}
	return s + ")"
}

// estimate bounds the run's time; with a budget it gives each cell an
// equal share and the warm-up what is left of it after the window and
// pause, and refuses a budget too small for the windows themselves.
func estimate(o Options, rows []PlanRow, cells int) (Estimate, error) {
	fixed := o.Duration + o.Pause
	e := Estimate{Budget: o.Budget}
	e.Least = time.Duration(cells) * (fixed + o.Hold)
	most := time.Duration(0)
	for _, row := range rows {
		warm := o.ReadyTimeout
		if warm <= 0 {
			warm = ReadyTimeout(row.Tokens)
		}
		most += time.Duration(row.Cells) * (fixed + warm)
	}
	e.Most = most
	if o.Budget <= 0 || cells == 0 {
		return e, nil
	}
	share := o.Budget / time.Duration(cells)
	e.CellWarmup = share - fixed
	if floor := o.Hold + o.ScrapeInterval; e.CellWarmup < floor {
		return e, fmt.Errorf("budget %s cannot fit %d cells: each needs at least %s (window %s + pause %s + hold %s + one reading %s), %s in all; give a longer -budget, a shorter -duration or fewer cells",
			o.Budget, cells, fixed+floor, o.Duration, o.Pause, o.Hold, o.ScrapeInterval, time.Duration(cells)*(fixed+floor))
	}
	e.Most = time.Duration(cells) * share
	return e, nil
}

// Text is the estimate in a line, in the server's time and, for a
// time-scaled twin, in wall time too.
func (e Estimate) Text(cells, prefill int, scale float64) string {
	short := func(d time.Duration) string {
		if d >= time.Minute {
			return d.Round(time.Second).String()
		}
		return d.Round(100 * time.Millisecond).String()
	}
	wall := func(d time.Duration) string {
		s := short(d)
		if scale > 1 {
			s += fmt.Sprintf(" (%s wall at twin ×%g)", short(time.Duration(float64(d)/scale)), scale)
		}
		return s
	}
	s := fmt.Sprintf("%d %s and %d prefill %s: at least %s, at most %s", cells, plural(cells, "cell"), prefill, plural(prefill, "row"), wall(e.Least), wall(e.Most))
	if e.Budget > 0 {
		s += fmt.Sprintf(" within the budget of %s (each cell's warm-up ≤ %s)", e.Budget, e.CellWarmup.Round(time.Millisecond))
	}
	return s + ", plus the prefill and scout requests"
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Summary says, before anything is measured, how the plan runs: on a
// time-scaled twin that every wait and figure is model time, then the
// grid and the estimate (the notices are the plan's Notice).
func (p Plan) Summary(timeScale float64) []string {
	var out []string
	if timeScale > 1 {
		out = append(out, fmt.Sprintf("twin ×%g time scale: every wait (window, hold, timeouts, budget) and every figure is model time", timeScale))
	}
	return append(out, fmt.Sprintf("%s; estimate %s", p.Grid(), p.Estimate.Text(p.Cells, p.Prefill, timeScale)))
}
