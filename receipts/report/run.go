package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// Run is one benchmark run as read from disk: its receipts and, when the
// run kept one, its `go test -bench` output.
type Run struct {
	// Label names the run in the report ("baseline", "candidate").
	Label string
	// Dir is the directory as given; ReceiptDir the one the receipts came
	// from (Dir or Dir/receipts).
	Dir, ReceiptDir string
	// Entries are the receipts, sorted by set, arm and concurrency.
	Entries []Entry
	// Tokens and Matrices are the run's token-throughput receipts and
	// speed matrices (vetbench.tokens/v1, vetbench.matrix/v1), in file
	// order.
	Tokens   []TokensEntry
	Matrices []MatrixEntry
	// BenchFile is the benchmark output read (empty when there is none);
	// Bench its samples.
	BenchFile string
	Bench     *speed.Samples
}

// Entry is one receipt of a run and the file it came from.
type Entry struct {
	File    string
	Receipt *receipts.Receipt
}

// Key identifies a point within a run.
func (p Entry) Key() Key {
	return Key{Set: p.Receipt.Set, Arm: armOf(p.Receipt), C: p.Receipt.Pins.Concurrency}
}

// Key is a set, cache arm and concurrency level.
type Key struct {
	Set string
	// Arm is "cold", "warm", or empty when the receipt records none.
	Arm string
	C   int
}

func (k Key) String() string {
	s := fmt.Sprintf("%s c=%d", k.Set, k.C)
	if k.Arm == "warm" {
		s += " warm"
	}
	return s
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Set, b.Set), cmp.Compare(armRank(a.Arm), armRank(b.Arm)), cmp.Compare(a.Arm, b.Arm), cmp.Compare(a.C, b.C))
}

func armRank(a string) int {
	switch a {
	case "", "cold":
		return 0
	case "warm":
		return 1
	}
	return 2
}

func armOf(r *receipts.Receipt) string {
	if r.Server != nil && r.Server.CacheReset != nil {
		return string(r.Server.CacheReset.Arm)
	}
	return ""
}

// BenchName is the benchmark output of a `make bench` run directory.
const BenchName = "bench.txt"

// Load reads the run in dir: a `make bench` output (dir/receipts/*.json
// and dir/bench.txt) or a plain directory of receipts (dir/*.json, and
// dir/bench.txt when present). Judgment receipts may be vetbench's or
// typevet's; token-throughput receipts and speed matrices are told apart
// by their schema.
// An unreadable receipt fails the load with its file and field; so does a
// malformed bench.txt, and two receipts of one point. Errors name the
// directory or file.
func Load(dir, label string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (want a run directory or a directory of receipts)", dir)
	}
	run := &Run{Label: label, Dir: dir, ReceiptDir: dir}
	if st, err := os.Stat(filepath.Join(dir, "receipts")); err == nil && st.IsDir() {
		run.ReceiptDir = filepath.Join(dir, "receipts")
	}
	paths, err := filepath.Glob(filepath.Join(run.ReceiptDir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no receipts (*.json) in it or in its receipts/ directory", dir)
	}
	if err := receipts.CheckDir(run.ReceiptDir, paths); err != nil {
		return nil, err
	}
	var errs []error
	for _, p := range paths {
		if err := run.read(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(run.Entries, func(a, b Entry) int { return compareKeys(a.Key(), b.Key()) })
	for i := 1; i < len(run.Entries); i++ {
		if a, b := run.Entries[i-1], run.Entries[i]; a.Key() == b.Key() {
			return nil, fmt.Errorf("%s and %s are both %s: one receipt per point", a.File, b.File, a.Key())
		}
	}
	bench := filepath.Join(dir, BenchName)
	if _, err := os.Stat(bench); err == nil {
		s, err := speed.LoadFile(bench)
		if err != nil {
			return nil, fmt.Errorf("%w (pass %s alone to report its receipts without the speed gate)", err, run.ReceiptDir)
		}
		run.BenchFile, run.Bench = bench, s
	}
	return run, nil
}

// read adds the document at path, told apart by its schema: a token
// receipt, a speed matrix, or a judgment receipt (vetbench's or
// typevet's).
func (run *Run) read(path string) error {
	data, err := receipts.ReadLimited(path) // the one size cap of every receipt reader
	if err != nil {
		return err
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	// Only a look at the schema; the real read reports every error.
	_ = json.Unmarshal(data, &probe)
	switch probe.Schema {
	case tokens.Schema:
		r, err := tokens.ReadFile(path)
		if err != nil {
			return err
		}
		run.Tokens = append(run.Tokens, TokensEntry{File: path, Receipt: r})
	case matrix.Schema:
		m, err := matrix.ReadFile(path)
		if err != nil {
			return err
		}
		run.Matrices = append(run.Matrices, MatrixEntry{File: path, Matrix: m})
	default:
		r, err := typevet.ReadAny(path)
		if err != nil {
			return err
		}
		run.Entries = append(run.Entries, Entry{File: path, Receipt: r})
	}
	return nil
}

// point returns the run's receipt at k.
func (r *Run) point(k Key) (*receipts.Receipt, bool) {
	if r == nil {
		return nil, false
	}
	for _, p := range r.Entries {
		if p.Key() == k {
			return p.Receipt, true
		}
	}
	return nil, false
}

// arm returns the receipts of one arm, in point order.
func (r *Run) arm(a string) []*receipts.Receipt {
	var out []*receipts.Receipt
	for _, p := range r.Entries {
		if p.Key().Arm == a {
			out = append(out, p.Receipt)
		}
	}
	return out
}
