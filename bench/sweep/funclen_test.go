package sweep_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MaxFuncLines is how long a function may be: one screen.
const MaxFuncLines = 80

// longKnown are the functions over MaxFuncLines when the rule came in,
// outside the folders whose owners split theirs in that step, with their
// length then: each is to be split along its steps. A listed function may
// not grow; one that fits now is noted (take it off the list).
var longKnown = map[string]int{}

// funcLen is one function of the tree: where, its name, its lines, and
// whether it is mostly a table (a composite literal over half its lines).
type funcLen struct {
	where string // "dir/file.go Name"
	lines int
	table bool
}

// longFuncs are the functions over MaxFuncLines in the non-test Go files
// under roots (relative to the module root), tables left out.
func longFuncs(t *testing.T, roots ...string) []funcLen {
	t.Helper()
	var out []funcLen
	for _, root := range roots {
		err := filepath.WalkDir(filepath.Join("../..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "/testdata/") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			name, _ := filepath.Rel("../..", path)
			out = append(out, fileFuncs(fset, f, filepath.ToSlash(name))...)
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

// fileFuncs are f's functions over MaxFuncLines.
func fileFuncs(fset *token.FileSet, f *ast.File, name string) []funcLen {
	var out []funcLen
	lines := func(n ast.Node) int { return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1 }
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || lines(fd) <= MaxFuncLines {
			continue
		}
		biggest := 0
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CompositeLit); ok {
				biggest = max(biggest, lines(cl))
				return false
			}
			return true
		})
		out = append(out, funcLen{where: name + " " + funcName(fd), lines: lines(fd), table: 2*biggest > lines(fd)})
	}
	return out
}

// Functions fit on a screen in every folder of non-test code: bench/,
// cmd/, receipts/, judgments/, fixtures/ and the twin's stub/.
func TestFunctionsFitOnAScreen(t *testing.T) {
	var long, fit []string
	for _, f := range longFuncs(t, "bench", "cmd", "receipts", "judgments", "fixtures", "stub") {
		if f.table {
			continue
		}
		fit = append(fit, f.where)
		if was, ok := longKnown[f.where]; !ok || f.lines > was {
			long = append(long, fmt.Sprintf("%s: %d lines", f.where, f.lines))
		}
	}
	require.Empty(t, long, "functions over %d lines (or listed ones grown): split them along their steps", MaxFuncLines)
	for k := range longKnown {
		if !slices.Contains(fit, k) {
			t.Logf("%s fits now (or is gone): take it off longKnown", k)
		}
	}
}

// funcName is a function's name, a method's qualified by its receiver's
// type (HeatMap.SVG): two methods of one name in a file are two entries,
// so neither hides behind the other's.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// Positive control: a function one line over is found, one at the limit
// and a table are not.
func TestLongFuncsFinds(t *testing.T) {
	body := func(n int) string { return strings.Repeat("\tx++\n", n) }
	src := "package p\n\nvar x int\n\ntype A struct{}\n\ntype B[T any] struct{}\n\nfunc long() {\n" + body(MaxFuncLines-1) + "}\n\nfunc fits() {\n" + body(MaxFuncLines-2) + "}\n\n" +
		"func table() []int {\n\treturn []int{\n" + strings.Repeat("\t\t1,\n", MaxFuncLines) + "\t}\n}\n\n" +
		"func (*A) SVG() {\n" + body(MaxFuncLines-1) + "}\n\nfunc (B[T]) SVG() {\n" + body(MaxFuncLines-1) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	got := fileFuncs(fset, f, "p.go")
	require.Len(t, got, 4)
	require.Equal(t, funcLen{where: "p.go long", lines: MaxFuncLines + 1}, got[0])
	require.True(t, got[1].table, "a table is no long function")
	require.Equal(t, []string{"p.go A.SVG", "p.go B.SVG"}, []string{got[2].where, got[3].where}, "methods of one name are told apart by receiver")
}
