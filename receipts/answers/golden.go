package answers

import (
	"errors"
	"fmt"

	"github.com/vetbench/vetbench/receipts"
)

// Golden checks a fresh receipt against the golden receipt at path.
//
// Without update it compares Normalize(golden) with Normalize(got) under
// p and returns the report (check Report.Failed); on a failed comparison
// it leaves the normalized receipt beside the golden as *.got.json, and
// removes a stale one on success. A missing golden is an error that says
// to run with -update.
//
// With update it rewrites the golden only when the normalized bytes
// differ and re-reads the new file to prove it stable (receipts.UpdateGolden);
// ci refuses it (receipts.ErrGoldenUpdateInCI): the caller says whether it
// runs in CI, this package never reads the environment. The returned
// report then compares the written golden with got.
func Golden(path string, got *receipts.Receipt, update, ci bool, p Policy) (*Report, error) {
	norm := receipts.Normalize(got)
	if _, err := receipts.Marshal(norm); err != nil {
		return nil, fmt.Errorf("golden %s: fresh receipt: %w", path, err)
	}
	if update {
		again, err := receipts.UpdateGolden(path, got, ci)
		if err != nil {
			return nil, err
		}
		return Compare(again, norm, p)
	}
	golden, err := receipts.ReadGolden(path)
	if err != nil {
		return nil, err
	}
	rep, err := Compare(receipts.Normalize(golden), norm, p)
	failed := err != nil || rep.Failed()
	if kerr := receipts.KeepGot(path, got, failed); kerr != nil {
		return rep, errors.Join(err, kerr)
	}
	return rep, err
}
