// Package replay reads the answers a receipt recorded, for the twin to
// serve again (stub.NewReplay). It reads vetbench receipts and typevet's;
// it returns judgments types only, so reading a receipt links no part of
// the twin, and the twin no part of the receipt readers.
package replay

import (
	"errors"
	"fmt"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// Recorded is what one receipt answered.
type Recorded struct {
	// Source names the receipt as "<source>:<set>" (e.g. "typevet:checks").
	Source string
	// Answers maps each item id to the answers recorded for it. Items that
	// failed hold no answers and are left out.
	Answers map[string][]judgments.Answer
}

// FromReceipt takes a receipt's answers. An item without an id or an id
// recorded twice is an error naming it: replay keys on item ids.
func FromReceipt(r *receipts.Receipt) (Recorded, error) {
	if r == nil {
		return Recorded{}, errors.New("replay: nil receipt")
	}
	rec := Recorded{Source: r.Source + ":" + r.Set, Answers: make(map[string][]judgments.Answer, len(r.Items))}
	seen := make(map[string]bool, len(r.Items))
	for i, it := range r.Items {
		if it.ID == "" {
			return Recorded{}, fmt.Errorf("replay: %s: item %d has no id", rec.Source, i)
		}
		if seen[it.ID] {
			return Recorded{}, fmt.Errorf("replay: %s: item %q recorded twice", rec.Source, it.ID)
		}
		seen[it.ID] = true
		if len(it.Answers) > 0 {
			rec.Answers[it.ID] = it.Answers
		}
	}
	return rec, nil
}

// ReadFile reads the receipt at path, a vetbench receipt or typevet's
// (told apart by their top-level keys; see typevet.ReadAny), and takes its
// answers.
func ReadFile(path string) (Recorded, error) {
	r, err := typevet.ReadAny(path)
	if err != nil {
		return Recorded{}, fmt.Errorf("replay: %w", err)
	}
	rec, err := FromReceipt(r)
	if err != nil {
		return Recorded{}, fmt.Errorf("%w (%s)", err, path)
	}
	return rec, nil
}
