package matrix

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/docfile"
)

// headerNames maps a table header, normalised (lower case, runs of
// anything but letters and digits as one "_"), to its CSV column: the
// CSV's own names and the page's ("Requests at once", "Total tok/s",
// "Per request", "Time between tokens", "Measured for", …).
var headerNames = map[string]string{
	"per_request":    "per_request_tok_s",
	"total":          "total_tok_s",
	"requests":       "requests_at_once",
	"concurrency":    "requests_at_once",
	"average_active": "average_active_requests",
	"completed":      "completed_requests",
	"ttft_p50":       "ttft",
	"tbt":            "time_between_tokens",
	"measured":       "measured_for",
	"output":         "output_tokens",
	"context_length": "context",
}

// normHeader normalises a header cell for headerNames.
func normHeader(s string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(strings.Trim(s, " *`_")) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
			continue
		}
		sep = true
	}
	n := b.String()
	if col, ok := headerNames[n]; ok {
		return col
	}
	return n
}

// IsTable reports whether data holds a markdown table (a line starting
// with "|" followed by a |---| separator line).
func IsTable(data []byte) bool {
	lines := strings.Split(string(data), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if isRow(lines[i]) && isSeparator(lines[i+1]) {
			return true
		}
	}
	return false
}

func isRow(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "|") }

func isSeparator(line string) bool {
	t := strings.TrimSpace(line)
	return isRow(t) && strings.Trim(t, "|-: ") == "" && strings.Contains(t, "-")
}

// cells splits a markdown table row into its trimmed cells and the
// 1-based byte column where each starts in line.
func cells(line string) (parts []string, at []int) {
	start := strings.Index(line, "|") + 1
	t := strings.TrimRight(line, " \t")
	t = strings.TrimSuffix(t, "|")
	for start <= len(t) {
		end := strings.IndexByte(t[start:], '|')
		if end < 0 {
			end = len(t) - start
		}
		raw := t[start : start+end]
		lead := len(raw) - len(strings.TrimLeft(raw, " \t"))
		parts = append(parts, strings.Trim(strings.TrimSpace(raw), "*`"))
		at = append(at, start+lead+1)
		start += end + 1
	}
	return parts, at
}

// ReadTable reads the speed matrix as the published page's markdown
// table holds it: the CSV's columns under the page's or the CSV's names,
// in any order. Without a phase column a row's phase is the last heading
// above its table that names one ("Prefill", "Sustained decode"),
// else sustained decode. A figure written "—", "-" or left empty is
// missing; a column the table lacks is missing in every row (the phase,
// context, requests and status columns must be there; a prefill row's
// requests default to 1). Errors are *receipts.SchemaError with the line
// and column of the cell.
func ReadTable(data []byte, name string) (*Matrix, error) {
	m := &Matrix{Schema: Schema, Source: SourcePublished, Target: receipts.Target{Kind: receipts.TargetLive}}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	phase := PhaseSustained
	tables := 0
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !isRow(line) {
			if p, ok := phaseOf(line); ok {
				phase = p
			}
			if m.Description == "" && strings.HasPrefix(line, "# ") {
				m.Description = strings.TrimPrefix(line, "# ")
			}
			continue
		}
		if i+1 >= len(lines) || !isSeparator(lines[i+1]) {
			return nil, &receipts.SchemaError{File: name, Line: i + 1, Column: 1, Msg: "a table row with no |---| separator under a header"}
		}
		next, err := readTable(m, lines, i, phase, name)
		if err != nil {
			return nil, err
		}
		tables++
		i = next - 1
	}
	if tables == 0 {
		return nil, &receipts.SchemaError{File: name, Msg: "no markdown table (a | header | row and a |---| line)"}
	}
	m.Identity.Digest = m.IdentityDigest()
	if err := m.validate(name); err != nil {
		return nil, err
	}
	return m, nil
}

// phaseOf reads a markdown heading naming a phase.
func phaseOf(line string) (string, bool) {
	l := strings.ToLower(line)
	switch {
	case !strings.HasPrefix(l, "#"):
		return "", false
	case strings.Contains(l, "prefill") && !strings.Contains(l, "decode"):
		return PhasePrefill, true
	case strings.Contains(l, "decode"):
		return PhaseSustained, true
	}
	return "", false
}

// readTable reads the table whose header is lines[at] and returns the
// index of the first line after it.
func readTable(m *Matrix, lines []string, at int, phase, name string) (int, error) {
	head, _ := cells(lines[at])
	index := map[string]int{}
	for j, h := range head {
		col := normHeader(h)
		if _, dup := index[col]; dup {
			return 0, &receipts.SchemaError{File: name, Line: at + 1, Column: j + 1, Path: col, Msg: fmt.Sprintf("column %q twice", h)}
		}
		index[col] = j
	}
	for _, col := range []string{"context", "status"} {
		if _, ok := index[col]; !ok {
			return 0, &receipts.SchemaError{File: name, Line: at + 1, Column: 1, Path: col,
				Msg: fmt.Sprintf("the table has no %s column (header: %s)", col, strings.Join(head, " | "))}
		}
	}
	i := at + 2
	for ; i < len(lines) && isRow(lines[i]); i++ {
		row, cols := cells(lines[i])
		line := i + 1
		rec := make([]string, len(Columns))
		srcCol := make([]int, len(Columns))
		for k, col := range Columns {
			j, ok := index[col]
			srcCol[k] = 1
			if ok && j < len(cols) {
				srcCol[k] = cols[j]
			}
			switch {
			case ok && j < len(row) && row[j] != "" && row[j] != "-":
				rec[k] = row[j]
			case col == "phase":
				rec[k] = phase
			case col == "completed_requests":
				rec[k] = "0"
			default:
				rec[k] = Missing
			}
		}
		if rec[colPhase] == PhasePrefill && rec[colRequests] == Missing {
			rec[colRequests] = "1"
		}
		rd := &rowReader{file: name, pos: func(k int) (int, int) { return line, srcCol[k] }}
		if err := rd.row(m, rec); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// ReadAnyFile reads a matrix in any form vetbench knows, told apart by
// content: a vetbench.matrix JSON, the published CSV, or the published
// page's markdown table.
func ReadAnyFile(path string) (*Matrix, error) {
	data, err := docfile.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("read matrix: %w", err)
		}
		return nil, &receipts.SchemaError{File: path, Msg: err.Error()}
	}
	switch t := bytes.TrimSpace(data); {
	case bytes.HasPrefix(t, []byte("{")):
		return Decode(data, path)
	case IsTable(data):
		return ReadTable(data, path)
	}
	return ReadCSV(bytes.NewReader(data), path)
}
