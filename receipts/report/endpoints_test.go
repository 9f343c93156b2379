package report_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/report"
)

func section(rep *report.Report, id string) (report.Section, bool) {
	for _, s := range rep.Sections {
		if s.ID == id {
			return s, true
		}
	}
	return report.Section{}, false
}

// Receipts of one endpoint (every receipt before several existed) get no
// endpoints section; a point spread over two gets a row per endpoint and
// its total, in the page and endpoints.csv.
func TestEndpointsSection(t *testing.T) {
	base, err := report.Load("testdata/base", "baseline")
	require.NoError(t, err)
	rep, err := report.Build(base, nil, report.DefaultOptions())
	require.NoError(t, err)
	_, ok := section(rep, "endpoints")
	require.False(t, ok)

	rec := base.Entries[0].Receipt
	half := rec.Throughput
	half.Judgments /= 2
	rest := rec.Throughput
	rest.Judgments -= half.Judgments
	rec.Endpoints = []receipts.EndpointFigures{{Endpoint: "http://a:8000", Throughput: half}, {Endpoint: "http://b:8000", Throughput: rest}}
	rep, err = report.Build(base, nil, report.DefaultOptions())
	require.NoError(t, err)
	s, ok := section(rep, "endpoints")
	require.True(t, ok)
	rows := s.Tables[0].Rows
	require.Len(t, rows, 3)
	require.Equal(t, []string{"http://a:8000", "http://b:8000", "total"}, []string{rows[0][2].Text, rows[1][2].Text, rows[2][2].Text})
	var html strings.Builder
	require.NoError(t, rep.WriteHTML(&html))
	require.Contains(t, html.String(), "http://b:8000")
	files, err := rep.CSVFiles()
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	require.Contains(t, names, "endpoints.csv")
}
