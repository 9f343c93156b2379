package receipts

import (
	"os"
	"testing"

	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// BenchmarkShapeCheck checks the biggest golden receipt's tree against
// the Receipt type: the cost of the shape check every read pays, apart
// from parsing (jsontree's BenchmarkDecode).
func BenchmarkShapeCheck(b *testing.B) {
	data, err := os.ReadFile("golden/faces_c1.golden.json")
	if err != nil {
		b.Fatal(err)
	}
	tree, err := jsontree.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := receiptShape.Check(tree, ""); err != nil {
			b.Fatal(err)
		}
	}
}
