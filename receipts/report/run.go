package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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
	// Entries are the receipts of the first pass (ReceiptDir), sorted by
	// set, arm and concurrency: the sweep whose answers are compared.
	Entries []Entry
	// Passes are the judgment receipts of the later passes of a -count N
	// run (ReceiptDir/pass2 …), one sorted sweep per pass, in pass order:
	// with Entries, the spread a curve shows when there is no bench.txt.
	Passes [][]Entry
	// Tokens and Matrices are the run's token-throughput receipts and
	// speed matrices (vetbench.tokens/v1, vetbench.matrix/v1), in file
	// order.
	Tokens   []TokensEntry
	Matrices []MatrixEntry
	// TokenPasses are the token receipts of the later passes (make tokens
	// -count N), one list per pass, in pass order: with Tokens, the spread
	// a token curve shows when there is no bench.txt. LaterMatrices counts
	// the later passes' speed matrices, which the heat maps leave out.
	TokenPasses   [][]TokensEntry
	LaterMatrices int
	// BenchFile is the benchmark output read (empty when there is none);
	// Bench its samples.
	BenchFile string
	Bench     *speed.Samples
	// benchNames are Bench's benchmark names by point, tokenNames its
	// token benchmarks' by workload and concurrency.
	benchNames map[Key]string
	tokenNames map[tokenKey]string
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
	if err := run.readAll(paths); err != nil {
		return nil, err
	}
	if run.Entries, err = sortEntries(run.Entries); err != nil {
		return nil, err
	}
	if err := run.readPasses(); err != nil {
		return nil, err
	}
	bench := filepath.Join(dir, BenchName)
	if _, err := os.Stat(bench); err == nil {
		s, err := speed.LoadFile(bench)
		if err != nil {
			return nil, fmt.Errorf("%w (pass %s alone to report its receipts without the speed gate)", err, run.ReceiptDir)
		}
		run.BenchFile, run.Bench = bench, s
		run.benchNames = benchPoints(s.Benchmarks())
		run.tokenNames = tokenBenchPoints(s.Benchmarks())
	}
	return run, nil
}

// readAll reads every document at paths, joining the errors.
func (run *Run) readAll(paths []string) error {
	var errs []error
	for _, p := range paths {
		if err := run.read(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sortEntries sorts a sweep by point and refuses two receipts of one.
func sortEntries(es []Entry) ([]Entry, error) {
	slices.SortStableFunc(es, func(a, b Entry) int { return compareKeys(a.Key(), b.Key()) })
	for i := 1; i < len(es); i++ {
		if a, b := es[i-1], es[i]; a.Key() == b.Key() {
			return nil, fmt.Errorf("%s and %s are both %s: one receipt per point", a.File, b.File, a.Key())
		}
	}
	return es, nil
}

// readPasses reads the receipts of ReceiptDir/pass<k> (k ≥ 2), in pass
// order: judgment and token receipts kept per pass, speed matrices
// counted (the heat maps show the first pass's).
func (run *Run) readPasses() error {
	dirs, err := filepath.Glob(filepath.Join(run.ReceiptDir, "pass*"))
	if err != nil {
		return err
	}
	type pass struct {
		k   int
		dir string
	}
	var ps []pass
	for _, d := range dirs {
		k, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "pass"))
		if st, serr := os.Stat(d); err != nil || k < 2 || serr != nil || !st.IsDir() {
			continue
		}
		ps = append(ps, pass{k, d})
	}
	slices.SortFunc(ps, func(a, b pass) int { return cmp.Compare(a.k, b.k) })
	for _, p := range ps {
		paths, err := filepath.Glob(filepath.Join(p.dir, "*.json"))
		if err != nil {
			return err
		}
		if err := receipts.CheckDir(p.dir, paths); err != nil {
			return err
		}
		sweep := &Run{}
		if err := sweep.readAll(paths); err != nil {
			return err
		}
		es, err := sortEntries(sweep.Entries)
		if err != nil {
			return err
		}
		run.Passes = append(run.Passes, es)
		run.TokenPasses = append(run.TokenPasses, sweep.Tokens)
		run.LaterMatrices += len(sweep.Matrices)
	}
	return nil
}

// benchPoints maps go test's benchmark names (Judgments/set=checks/c=4-2,
// …/arm=warm) to points; other benchmarks (open-loop rates, tokens) map
// to none.
func benchPoints(names []string) map[Key]string {
	out := map[Key]string{}
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, "Judgments/")
		if !ok {
			continue
		}
		rest = trimProcs(rest)
		k, ok := Key{}, true
		for _, part := range strings.Split(rest, "/") {
			key, v, _ := strings.Cut(part, "=")
			switch key {
			case "set":
				k.Set = v
			case "arm":
				k.Arm = v
			case "c":
				c, err := strconv.Atoi(v)
				k.C, ok = c, ok && err == nil
			default:
				ok = false // a rate, or a name not of a closed-loop point
			}
		}
		if ok && k.Set != "" && k.C > 0 {
			out[k] = name
		}
	}
	return out
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to a benchmark
// name's last element (c=4-2 → c=4).
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 && i > strings.LastIndexByte(name, '/') {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// benchName is the benchmark of point k in the run's bench.txt: its own
// name, or the one without an arm (a run of one arm names none), or the
// cold arm's for a receipt that records none.
func (r *Run) benchName(k Key) (string, bool) {
	other := "" // a receipt's arm where the bench name has none
	if k.Arm == "" {
		other = "cold" // PointName's arm for a receipt that records none
	}
	for _, arm := range []string{k.Arm, other} {
		if name, ok := r.benchNames[Key{Set: k.Set, Arm: arm, C: k.C}]; ok {
			return name, true
		}
	}
	return "", false
}

// passes are the run's receipts of point k, one per pass, in pass order.
func (r *Run) passes(k Key) []*receipts.Receipt {
	var out []*receipts.Receipt
	for _, sweep := range append([][]Entry{r.Entries}, r.Passes...) {
		for _, e := range sweep {
			if e.Key() == k {
				out = append(out, e.Receipt)
			}
		}
	}
	return out
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
