package speed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/receipts"
)

// FellBehind reads the receipts beside each side's output (a run
// directory's receipts/*.json next to its bench.txt, and every later
// pass's in receipts/pass<k>) and says, per side,
// how many carry the warning that the twin fell behind its model
// (receipts.TwinBehind): those figures are the machine's as much as the
// model's, so a slower verdict may be the machine's. Nothing when no side
// has one, or an output stands alone; a receipt that does not read is not
// counted (the decision never rests on this).
func FellBehind(files [2]string) []string {
	var notes []string
	for i, side := range []string{"baseline", "candidate"} {
		dir := filepath.Join(filepath.Dir(files[i]), "receipts")
		// Every pass the output holds lines of: receipts/ is the first,
		// receipts/pass<k> the others.
		paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		later, _ := filepath.Glob(filepath.Join(dir, "pass*", "*.json"))
		paths = append(paths, later...)
		var behind []string
		for _, p := range paths {
			if fellBehind(p) {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					rel = filepath.Base(p)
				}
				behind = append(behind, filepath.ToSlash(rel))
			}
		}
		if len(behind) > 0 {
			named := behind
			if len(named) > maxNamedBehind {
				named = append(slices.Clone(named[:maxNamedBehind]), fmt.Sprintf("… %d more", len(behind)-maxNamedBehind))
			}
			notes = append(notes, fmt.Sprintf("%s: the twin fell behind its model in %d of %d receipts (%s): part of a difference may be the machine that ran it, not the software (docs/hygiene.md)",
				side, len(behind), len(paths), strings.Join(named, ", ")))
		}
	}
	return notes
}

// maxNamedBehind is how many receipts a FellBehind note names.
const maxNamedBehind = 6

// fellBehind says whether the receipt at path carries the warning.
func fellBehind(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var r struct {
		Warnings []string `json:"warnings"`
	}
	if json.Unmarshal(data, &r) != nil {
		return false
	}
	return len(receipts.FellBehind(r.Warnings)) > 0
}
