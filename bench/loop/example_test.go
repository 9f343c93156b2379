package loop_test

import (
	"fmt"
	"strings"

	"github.com/vetbench/vetbench/bench/loop"
)

// A stream's text fed as it arrives; the detector confirms the loop at the
// first 256-character boundary where it is 4 cycles and 4096 characters
// long, however the text was split.
func ExampleDetector() {
	var d loop.Detector
	d.Write("Here is the answer: ")
	for range 1100 {
		d.Write("duct")
	}
	f := d.Close()
	fmt.Println(f.Status, f.PeriodChars, f.Cycle, f.DetectedAtChar)
	fmt.Println(loop.Check(strings.Repeat("duct", 1023)).Status)
	// Output:
	// confirmed 4 duct 4352
	// suspected
}
