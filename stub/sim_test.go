package stub

import (
	"testing"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
)

// simRun is a simulated run (the tests' short name).
type simRun = TypevetRun

// simItems renders every request of a set as the judgments client sends
// it.
func simItems(t testing.TB, set fixtures.Set, p Profile) [][]simReq {
	t.Helper()
	out, err := simRequests(set.Spec, caseItems(set), p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// caseItems are a set's items, in order.
func caseItems(set fixtures.Set) []judgments.Item {
	items := make([]judgments.Item, len(set.Cases))
	for i, c := range set.Cases {
		items[i] = c.Item
	}
	return items
}
