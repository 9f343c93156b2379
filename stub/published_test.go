package stub

import "testing"

// loadE2BMatrix is the published E2B matrix (ReadE2BMatrix).
func loadE2BMatrix(t testing.TB) (map[[2]int]PublishedCell, map[int]PublishedCell) {
	t.Helper()
	d, p, err := ReadE2BMatrix("testdata/speed-matrix-gemma-4-E2B-h200nvl.csv")
	if err != nil {
		t.Fatal(err)
	}
	return d, p
}

// loadRTX3090 is the published RTX 3090 receipt (ReadRTX3090).
func loadRTX3090(t testing.TB) RTX3090Receipt {
	t.Helper()
	r, err := ReadRTX3090("testdata/token-throughput-rtx3090.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// e2bProfile is ProfileE2B, failing the test on an error.
func e2bProfile(t testing.TB, eff Efficiency) Profile {
	t.Helper()
	p, err := ProfileE2B(eff)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
