package report

// Tables of charts: a chart's data as a long-form table, so a new figure
// needs no table code of its own. A token-throughput section is
//
//	ch := LineChart{Title: "decode tok/s", LogX: true, Series: ...}
//	rep.Sections = append(rep.Sections, Section{ID: "tokens", Title: "Token throughput",
//		Charts: []Chart{ch}, Tables: []Table{LineTable(ch, "tokens.csv")}})
//
// and a speed matrix the same with a HeatMap and HeatMapTable.

// LineTable lists a line chart's points, one row per series and x.
func LineTable(c LineChart, csv string) Table {
	t := Table{Caption: c.Title, CSV: csv, Header: []string{"series", orName(c.XLabel, "x"), orName(c.YLabel, "y")}}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !finite(p.X) || !finite(p.Y) {
				continue
			}
			t.Rows = append(t.Rows, []Cell{{Text: s.Name}, {Text: num(p.X), Raw: raw(p.X)}, {Text: num(p.Y), Raw: raw(p.Y)}})
		}
	}
	return t
}

// HeatMapTable lists a heat map's cells, row by row.
func HeatMapTable(m HeatMap, csv string) Table {
	value := "value"
	if m.Unit != "" {
		value += " (" + m.Unit + ")"
	}
	t := Table{Caption: m.Title, CSV: csv, Header: []string{orName(m.RowLabel, "row"), orName(m.ColLabel, "column"), value, "status"}}
	for r, rn := range m.Rows {
		for c, cn := range m.Cols {
			cell := m.cell(r, c)
			v := Cell{Text: "—"}
			if cell.Value != nil && finite(*cell.Value) {
				v = Cell{Text: num(*cell.Value), Raw: raw(*cell.Value)}
			}
			status := Cell{Text: cell.Status}
			if cell.Tip != "" {
				status.Tip = cell.Tip
			}
			t.Rows = append(t.Rows, []Cell{{Text: rn}, {Text: cn}, v, status})
		}
	}
	return t
}

func orName(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
