package sweep_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The folder tree is the layer diagram (docs/architecture.md): each
// package imports only packages of its own layer or below.
//
//	6 cmd/...                     flags → library → printing
//	5 bench/sweep, bench/sweep/*  a run and its edges
//	4 bench, bench/{probe,…}      measuring: knows an endpoint, no twin
//	3 receipts/...                documents, decisions, receipts/roofline
//	2 fixtures/...                image sets as data
//	1 judgments/...               questions, scoring, the HTTP client
//
// The twin (stub/...) stands beside them: it imports only judgments,
// receipts/roofline and itself, and only bench/sweep/target and cmd/...
// import it, so the measuring code never knows what answers it.
const module = "github.com/vetbench/vetbench"

// measuring are bench's subpackages that measure (under bench/, not sweep).
var measuring = []string{"probe", "scrape", "audit", "metrics", "stream", "loop", "decode", "grid"}

// layer is a package's rank (higher imports lower); twin is stub's own.
const twin = -1

// layerOf is the layer of a module-relative package path; ok false for a
// package with no layer (a new folder must be placed).
func layerOf(pkg string) (rank int, ok bool) {
	under := func(p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }
	switch {
	case under("cmd"):
		return 6, true
	case under("bench/sweep"):
		return 5, true
	case pkg == "bench":
		return 4, true
	case under("stub"):
		return twin, true
	case under("receipts"):
		return 3, true
	case under("fixtures"):
		return 2, true
	case under("judgments"):
		return 1, true
	}
	for _, m := range measuring {
		if under("bench/" + m) {
			return 4, true
		}
	}
	return 0, false
}

// checkEdge says why pkg may not import dep (module-relative paths), or
// nil.
func checkEdge(pkg, dep string) error {
	from, ok := layerOf(pkg)
	if !ok {
		return fmt.Errorf("%s has no layer: place it in layerOf and docs/architecture.md", pkg)
	}
	to, ok := layerOf(dep)
	if !ok {
		return fmt.Errorf("%s has no layer: place it in layerOf and docs/architecture.md", dep)
	}
	under := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	switch {
	case from == twin && to == twin:
		return nil
	case from == twin:
		// Test support under stub/internal may build its requests from the
		// fixtures; the twin itself may not.
		if under(dep, "judgments") || dep == "receipts/roofline" || (under(pkg, "stub/internal") && under(dep, "fixtures")) {
			return nil
		}
		return fmt.Errorf("%s imports %s: the twin imports only judgments and receipts/roofline", pkg, dep)
	case to == twin:
		if from == 6 || pkg == "bench/sweep/target" {
			return nil
		}
		return fmt.Errorf("%s imports the twin %s: only bench/sweep/target and cmd may", pkg, dep)
	case to > from:
		return fmt.Errorf("%s (layer %d) imports %s (layer %d): an upward import", pkg, from, dep, to)
	}
	return nil
}

// pkgInfo is what go list says of a package (no test files).
type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages runs go list over the module, from its root.
func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json=ImportPath,Imports,Deps", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var pkgs []pkgInfo
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// problems are every import of pkgs that breaks the layers, and every
// package of the twin whose dependencies reach under bench/.
func problems(pkgs []pkgInfo) []string {
	var out []string
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		for _, imp := range p.Imports {
			if dep, ok := rel(imp); ok {
				if err := checkEdge(from, dep); err != nil {
					out = append(out, err.Error())
				}
			}
		}
		if r, _ := layerOf(from); r != twin {
			continue
		}
		for _, d := range p.Deps {
			if dep, ok := rel(d); ok && (dep == "bench" || strings.HasPrefix(dep, "bench/")) {
				out = append(out, fmt.Sprintf("go list -deps ./%s holds %s: the twin sits beside the measuring code, not above it", from, dep))
			}
		}
	}
	return out
}

func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	require.Empty(t, problems(pkgs), "imports against the layers (docs/architecture.md)")
	// The module's packages are all placed, and the twin is among them.
	var twins int
	for _, p := range pkgs {
		r, _ := rel(p.ImportPath)
		if l, _ := layerOf(r); l == twin {
			twins++
		}
	}
	require.NotZero(t, twins)
}

// Positive controls: the rule rejects an injected upward edge of every
// kind, and accepts the edges the tree has.
func TestLayerRule(t *testing.T) {
	for _, e := range [][2]string{
		{"bench", "bench/sweep/config"},     // measuring reads a run's configuration
		{"bench/decode", "bench/sweep"},     // measuring calls the sweep
		{"receipts", "bench"},               // a document knows the measurer
		{"receipts/speed", "bench/metrics"}, // a decision knows the measurer
		{"judgments", "fixtures"},           // the client knows the sets
		{"fixtures", "receipts"},            // the sets know the documents
		{"bench", "stub"},                   // the measuring code knows the twin
		{"bench/grid", "stub/container"},    // …in a container
		{"receipts/report", "stub"},         // a report knows the twin
		{"stub", "bench"},                   // the twin knows the measurer
		{"stub", "receipts"},                // the twin knows the documents
		{"stub", "receipts/replay"},         // …only cmd/vllmstub may
		{"stub", "bench/sweep/config"},      // the twin reads a run's configuration
		{"bench/sweep", "cmd/vetbench"},     // the library knows the CLI
		{"tools/fit", "bench"},              // a new folder with no layer
	} {
		require.Error(t, checkEdge(e[0], e[1]), "%s → %s", e[0], e[1])
	}
	for _, e := range [][2]string{
		{"cmd/vetbench", "bench/sweep"},
		{"cmd/vllmstub", "stub"},
		{"cmd/vllmstub", "receipts/replay"},
		{"bench/sweep", "bench"},
		{"bench/sweep/target", "stub/container"},
		{"bench", "bench/probe"},
		{"bench/grid", "receipts/matrix"},
		{"receipts/report", "receipts/roofline"},
		{"stub", "receipts/roofline"},
		{"stub", "judgments/errclass"},
		{"stub/container", "stub"},
		{"fixtures/sets", "judgments"},
	} {
		require.NoError(t, checkEdge(e[0], e[1]), "%s → %s", e[0], e[1])
	}
	// A twin whose dependencies reach under bench/ fails even when its own
	// imports look fine (through a package that moved).
	got := problems([]pkgInfo{{ImportPath: module + "/stub", Imports: []string{module + "/judgments"}, Deps: []string{module + "/bench/probe"}}})
	require.Len(t, got, 1)
	require.Contains(t, got[0], "go list -deps ./stub holds bench/probe")
}
