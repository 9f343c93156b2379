package speed_test

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// TestLoadRefusesImpossibleValues: NaN (benchmath's Mann–Whitney U never
// ends on it), ±Inf (compared as "same") and a negative rate are refused
// where they enter, with the file and line. The control: the same output
// with a finite value loads and gates.
func TestLoadRefusesImpossibleValues(t *testing.T) {
	t.Parallel()
	good := benchOutput(rand.New(rand.NewPCG(4, 9)), base, 5, "x")
	_, err := speed.Load(strings.NewReader(good), "good.txt")
	require.NoError(t, err, "control")
	for _, bad := range []string{"NaN", "+Inf", "-Inf", "Inf", "-3.5"} {
		t.Run(bad, func(t *testing.T) {
			lines := strings.Split(good, "\n")
			for i, l := range lines {
				if strings.HasPrefix(l, "BenchmarkJudgments/set=faces") {
					f := strings.Fields(l)
					f[4] = bad // the judgments/s value
					lines[i] = strings.Join(f, " ")
					_, err := speed.Load(strings.NewReader(strings.Join(lines, "\n")), "bench.txt")
					require.ErrorContains(t, err, "bench.txt:"+strconv.Itoa(i+1)+": Judgments/set=faces/c=16-2: judgments/s")
					return
				}
			}
			t.Fatal("no faces line")
		})
	}
}

// TestLoadFileRefusesNonRegular: a named pipe would block the open
// forever, /dev/zero would never end; only regular files are inputs.
func TestLoadFileRefusesNonRegular(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "bench.txt")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, err := speed.LoadFile(fifo)
	require.ErrorContains(t, err, "not a regular file")
	link := filepath.Join(t.TempDir(), "zero.txt")
	require.NoError(t, os.Symlink("/dev/zero", link))
	_, err = speed.LoadFile(link)
	require.ErrorContains(t, err, "not a regular file")
}

// TestLoadCapsTheOutput: a stream past MaxBytes is refused, read no
// further than the cap; a sparse file past it is refused by its size.
func TestLoadCapsTheOutput(t *testing.T) {
	t.Parallel()
	_, err := speed.Load(&endless{line: []byte("BenchmarkX-2 1 5 ns/op\n")}, "pipe")
	require.ErrorIs(t, err, speed.ErrTooLarge)
	path := filepath.Join(t.TempDir(), "bench.txt")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(speed.MaxBytes+1))
	require.NoError(t, f.Close())
	_, err = speed.LoadFile(path)
	require.ErrorIs(t, err, speed.ErrTooLarge)
}

type endless struct {
	line []byte
	off  int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], e.line[e.off:])
		n += c
		e.off = (e.off + c) % len(e.line)
	}
	return n, nil
}

// FuzzGate feeds benchmark values from outside through Load into Decide:
// it must end, and a load that succeeds holds only finite values, so no
// verdict is drawn from NaN or ±Inf.
func FuzzGate(f *testing.F) {
	f.Add("5.0 5.1 5.2 5.0 5.1", "4.0 4.1 4.2 4.0 4.1")
	f.Add("5.0 NaN 5.2", "5.0 5.1 5.2")
	f.Add("5.0 5.1 5.2", "-Inf +Inf 5")
	f.Add("1e308 1e308", "-1e-308 0")
	f.Fuzz(func(t *testing.T, bs, cs string) {
		base, berr := speed.Load(strings.NewReader(textLines(bs)), "base")
		cand, cerr := speed.Load(strings.NewReader(textLines(cs)), "cand")
		if berr != nil || cerr != nil {
			return
		}
		for _, s := range []*speed.Samples{base, cand} {
			for _, v := range s.Values("X-2", "judgments/s") {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("loaded %v", v)
				}
			}
		}
		speed.Decide(base, cand, speed.DefaultPolicy())
	})
}

// textLines writes the fuzzed values as runs of BenchmarkX in
// judgments/s, at most 12 (the statistics are quadratic in the runs; a
// real -count is 10).
func textLines(s string) string {
	var b strings.Builder
	b.WriteString("Unit judgments/s better=higher\n")
	f := strings.Fields(s)
	for _, v := range f[:min(len(f), 12)] {
		b.WriteString("BenchmarkX-2 1 " + v + " judgments/s\n")
	}
	return b.String()
}
