package rundir

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))

func TestNewRunsDoNotShareADirectory(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "out")
	a, err := New(root, now)
	require.NoError(t, err)
	b, err := New(root, now) // the same second: the random part differs
	require.NoError(t, err)
	require.NotEqual(t, a.Path, b.Path)
	require.Regexp(t, regexp.MustCompile(`^20261201T110000Z-[0-9a-f]{6}$`), a.ID, "UTC time, then 6 hex digits")
	require.Equal(t, filepath.Join(root, "runs", a.ID), a.Path)
	require.DirExists(t, a.Path)
	require.Empty(t, a.Warning)

	// latest points at the newest, relatively (the tree can move).
	link, err := os.Readlink(filepath.Join(root, "latest"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join("runs", b.ID), link)
	st, err := os.Stat(filepath.Join(root, "latest"))
	require.NoError(t, err)
	require.True(t, st.IsDir(), "latest resolves to the run directory")

	// A latest that is not a link is the user's: left alone, and said.
	root2 := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root2, "latest"), 0o755))
	c, err := New(root2, now)
	require.NoError(t, err)
	require.Contains(t, c.Warning, "exists and is not a link; left alone")
}

func TestNamed(t *testing.T) {
	t.Parallel()
	base := t.TempDir()

	// Missing: created. Relative and absolute paths both mean what they say.
	abs := filepath.Join(base, "abs", "dir")
	d, err := openClosed(t, abs, false)
	require.NoError(t, err)
	require.Equal(t, abs, d.Path)
	require.DirExists(t, abs)

	// Empty, holding only other things, or what a run that measured
	// nothing left: fine, and the leftovers go (but the twin's log).
	require.NoError(t, os.WriteFile(filepath.Join(abs, "notes.md"), []byte("mine"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(abs, ReceiptsDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(abs, SettingsFile), []byte("sets = []"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(abs, BenchFile), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(abs, TwinLog), []byte("no docker"), 0o644))
	_, err = openClosed(t, abs, false)
	require.NoError(t, err, "an empty receipts/ and an empty bench.txt hold nothing")
	require.NoFileExists(t, filepath.Join(abs, SettingsFile))
	require.NoFileExists(t, filepath.Join(abs, BenchFile))
	require.FileExists(t, filepath.Join(abs, TwinLog))

	// Results: refused, each named; with force, replaced, the rest kept.
	path, pass, err := d.NextReceipt("checks_c1.json")
	require.NoError(t, err)
	require.Equal(t, 1, pass)
	require.NoError(t, os.WriteFile(path, []byte("{}"), 0o644))
	require.NoError(t, os.WriteFile(d.File(BenchFile), []byte("x"), 0o644))
	_, err = openClosed(t, abs, false)
	require.ErrorIs(t, err, ErrHoldsResults)
	require.ErrorContains(t, err, "(bench.txt, receipts/)")
	require.ErrorContains(t, err, "pass -force (VETBENCH_FORCE=1; make bench FORCE=1)")
	require.FileExists(t, path, "a refusal touches nothing")

	_, err = openClosed(t, abs, true)
	require.NoError(t, err)
	require.NoFileExists(t, path)
	require.NoFileExists(t, filepath.Join(abs, BenchFile))
	require.NoFileExists(t, filepath.Join(abs, TwinLog))
	require.FileExists(t, filepath.Join(abs, "notes.md"))

	// The old layout (VETBENCH_OUT named the receipts directory): refused;
	// force does not delete those receipts.
	old := filepath.Join(base, "old")
	require.NoError(t, os.MkdirAll(old, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(old, "checks_c16.json"), []byte("{}"), 0o644))
	_, err = openClosed(t, old, false)
	require.ErrorIs(t, err, ErrHoldsResults)
	_, err = openClosed(t, old, true)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(old, "checks_c16.json"))

	// A file is not a directory.
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = openClosed(t, file, true)
	require.ErrorContains(t, err, "not a directory")

	// A link to nowhere is named as one (MkdirAll said "file exists").
	dangling := filepath.Join(base, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(base, "nowhere"), dangling))
	_, err = openClosed(t, dangling, true)
	require.ErrorContains(t, err, "a symbolic link to "+filepath.Join(base, "nowhere")+", which does not exist")
	require.NoDirExists(t, filepath.Join(base, "nowhere"), "nothing is created behind the link")
}

func TestOpen(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d, err := Open("", root, false, now)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, RunsDir, d.ID), d.Path)
	named := filepath.Join(root, "baseline")
	d, err = Open(named, root, false, now)
	require.NoError(t, err)
	require.Equal(t, named, d.Path)
	require.Equal(t, "baseline", d.ID)
}

// Every pass keeps its receipt: the first in receipts/, the k-th in
// receipts/pass<k>; nothing already there is replaced.
func TestNextReceiptKeepsEveryPass(t *testing.T) {
	t.Parallel()
	d, err := Named(t.TempDir(), false)
	require.NoError(t, err)
	var got []string
	for range 3 {
		p, _, err := d.NextReceipt("checks_c16.json")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o644))
		got = append(got, p)
	}
	p, pass, err := d.NextReceipt("faces_c16.json")
	require.NoError(t, err)
	require.Equal(t, 1, pass, "passes count per point")
	require.Equal(t, []string{
		filepath.Join(d.Path, "receipts", "checks_c16.json"),
		filepath.Join(d.Path, "receipts", "pass2", "checks_c16.json"),
		filepath.Join(d.Path, "receipts", "pass3", "checks_c16.json"),
	}, got)
	require.Equal(t, filepath.Join(d.Path, "receipts", "faces_c16.json"), p)

	// A path taken by someone else is skipped, never returned.
	taken := filepath.Join(d.PassDir(4), "checks_c16.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(taken), 0o755))
	require.NoError(t, os.WriteFile(taken, []byte("keep"), 0o644))
	p, pass, err = d.NextReceipt("checks_c16.json")
	require.NoError(t, err)
	require.Equal(t, 5, pass)
	require.Equal(t, filepath.Join(d.Path, "receipts", "pass5", "checks_c16.json"), p)

	sub, err := d.Sub("baseline")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(d.Path, "baseline"), sub.Path)
}

// openClosed is Named, its lock released at once: each call stands for
// one run after another.
func openClosed(t *testing.T, path string, force bool) (*Dir, error) {
	d, err := Named(path, force)
	if err == nil {
		require.NoError(t, d.Close())
	}
	return d, err
}

// A sub-directory's earlier results (gate -run's baseline/ and candidate/)
// are refused as a named directory's are, and replaced when the parent was
// opened with force (gate -run -out DIR -force).
func TestSubReplacesOnlyWhenForced(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "gate")
	fill := func() string {
		d, err := Named(root, false)
		require.NoError(t, err)
		defer d.Close()
		sub, err := d.Sub("baseline")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(sub.File(BenchFile), []byte("BenchmarkX 1 2 ns/op\n"), 0o644))
		return sub.File(BenchFile)
	}
	bench := fill()

	d, err := Named(root, false)
	require.NoError(t, err)
	_, err = d.Sub("baseline")
	require.ErrorIs(t, err, ErrHoldsResults)
	require.FileExists(t, bench, "a refusal touches nothing")
	require.NoError(t, d.Close())

	d, err = Named(root, true)
	require.NoError(t, err)
	defer d.Close()
	sub, err := d.Sub("baseline")
	require.NoError(t, err)
	require.NoFileExists(t, bench, "forced: the earlier side's results are replaced")
	require.NoError(t, sub.Close())
}
