package matrix

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText renders the matrix as the seed pages show it: the prefill
// rows (context, prefill tok/s, TTFT), then sustained decode with contexts
// as rows and simultaneous requests as columns, each cell "total tok/s ·
// TTFT", followed by the status when it is not Valid (a Looped, Failed or
// Skipped cell shows its status only). Reasons, when recorded, are listed
// under the table.
func WriteText(w io.Writer, m *Matrix) error {
	var b strings.Builder
	if m.Description != "" {
		b.WriteString(m.Description + "\n\n")
	}
	if len(m.Prefill) > 0 {
		b.WriteString("Prefill\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "context\tprefill tok/s\tTTFT\tstatus")
		for _, r := range m.Prefill {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Context, fmtTokS(r.TokS), fmtMs0(r.TTFTMs), r.Status.Label())
		}
		tw.Flush()
		b.WriteString("\n")
	}
	if len(m.Cells) > 0 {
		b.WriteString("Sustained decode: total tok/s · TTFT (status when not Valid); columns are simultaneous requests\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		cs := m.Concurrencies()
		head := []string{"context"}
		for _, c := range cs {
			head = append(head, strconv.Itoa(c))
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, ctx := range m.Contexts() {
			row := []string{ctx}
			for _, c := range cs {
				row = append(row, cellText(m.Cell(ctx, c)))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	var reasons []string
	for _, r := range m.Prefill {
		if r.Reason != "" {
			reasons = append(reasons, fmt.Sprintf("prefill %s: %s: %s", r.Context, r.Status.Label(), r.Reason))
		}
	}
	for _, c := range m.Cells {
		if c.Reason != "" {
			reasons = append(reasons, fmt.Sprintf("%s c=%d: %s: %s", c.Context, c.Concurrency, c.Status.Label(), c.Reason))
		}
	}
	if len(reasons) > 0 {
		b.WriteString("\n" + strings.Join(reasons, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Text is WriteText into a string.
func Text(m *Matrix) string {
	var b strings.Builder
	_ = WriteText(&b, m)
	return b.String()
}

func cellText(c *Cell) string {
	switch {
	case c == nil:
		return ""
	case c.Status == Looped || c.Status == Failed || c.Status == Skipped || c.TotalTokS == nil:
		return c.Status.Label()
	}
	s := fmtTokS(c.TotalTokS) + " · " + fmtMs0(c.TTFTMs)
	if c.Status != Valid {
		s += " · " + c.Status.Label()
	}
	return s
}
