package report_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/vetbench/vetbench/receipts/report"
)

// A new figure is a Section: charts plus tables, the tables with a CSV
// name also written as CSV. This is how a speed matrix (rows context,
// columns concurrency, colour tok/s, a status per cell) joins a report
// built from receipts.
func Example_speedMatrix() {
	base, err := report.Load("testdata/base", "baseline")
	if err != nil {
		log.Fatal(err)
	}
	rep, err := report.Build(base, nil, report.DefaultOptions())
	if err != nil {
		log.Fatal(err)
	}
	v := func(x float64) *float64 { return &x }
	m := report.HeatMap{
		Title: "decode tok/s", RowLabel: "context", ColLabel: "concurrency", Unit: "tok/s",
		Rows: []string{"1024", "8192"}, Cols: []string{"1", "16"},
		Cells: [][]report.HeatCell{
			{{Value: v(41.5), Status: "Valid"}, {Value: v(480), Status: "Valid"}},
			{{Value: v(38), Status: "Valid"}, {Status: "Requests queued"}},
		},
	}
	rep.Sections = append(rep.Sections, report.Section{
		ID: "matrix", Title: "Speed matrix",
		Charts: []report.Chart{m},
		Tables: []report.Table{report.HeatMapTable(m, "matrix.csv")},
	})
	if err := rep.WriteHTML(new(strings.Builder)); err != nil {
		log.Fatal(err)
	}
	files, err := rep.CSVFiles()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "matrix.csv" {
			os.Stdout.Write(f.Data)
		}
	}
	fmt.Println(len(files), "CSV files")
	// Output:
	// context,concurrency,value (tok/s),status
	// 1024,1,41.5,Valid
	// 1024,16,480,Valid
	// 8192,1,38,Valid
	// 8192,16,—,Requests queued
	// 13 CSV files
}
