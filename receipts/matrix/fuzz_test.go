package matrix

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/vetbench/vetbench/receipts"
)

// FuzzMatrixCSV reads arbitrary bytes as the published CSV layout: a read
// either fails with a *receipts.SchemaError or gives a matrix that writes,
// reads back and writes the same bytes. Seeds are in
// testdata/fuzz/FuzzMatrixCSV (rows of the published files, and broken
// ones); the checks are byte comparisons, cheap enough for every input:
//
//	go test ./receipts/matrix -run '^$' -fuzz '^FuzzMatrixCSV$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzMatrixCSV(f *testing.F) {
	f.Add([]byte("# m on one GPU\nphase,context,requests_at_once,status,total_tok_s,per_request_tok_s,ttft,time_between_tokens,average_active_requests,completed_requests,output_tokens,measured_for\n" +
		"Prefill,8K,1,Valid,62K,—,132 ms,—,—,1,—,—\nSustained decode,8K,4,Valid,\"1,001.5\",256.7,113 ms,3.9 ms,4.0,8,\"30,043\",30.0 s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			t.Skip("long inputs add no shapes")
		}
		m, err := ReadCSV(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			var se *receipts.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error is not a SchemaError: %v", err)
			}
			return
		}
		var first, second strings.Builder
		if err := WriteCSV(&first, m); err != nil {
			t.Fatalf("read a matrix that does not write: %v", err)
		}
		again, err := ReadCSV(strings.NewReader(first.String()), "again.csv")
		if err != nil {
			t.Fatalf("written matrix does not read back: %v\n%s", err, first.String())
		}
		if err := WriteCSV(&second, again); err != nil || first.String() != second.String() {
			t.Fatalf("write, read, write changed the matrix (%v):\n%s\n%s", err, first.String(), second.String())
		}
	})
}
