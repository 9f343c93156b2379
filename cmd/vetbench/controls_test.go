package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// baseline is typevet's signatures run at c=16, read into vetbench's
// model; the candidates below are it with one thing changed.
func baseline(t *testing.T) *receipts.Receipt {
	t.Helper()
	r, err := typevet.ReadFile(tv("signature_match_vllm_throughput_full_c16.json"))
	require.NoError(t, err)
	return r
}

func write(t *testing.T, dir, name string, r *receipts.Receipt) string {
	t.Helper()
	path := filepath.Join(dir, name)
	r.Identity.Digest = ""
	require.NoError(t, receipts.WriteFile(path, r))
	return path
}

// swapTop exchanges the two most probable labels of a Choice answer, so
// its verdict moves; the answer stays valid.
func swapTop(a *judgments.Answer) {
	ls := append([]string(nil), a.Labels...)
	sort.SliceStable(ls, func(i, j int) bool { return a.Probabilities[ls[i]] > a.Probabilities[ls[j]] })
	p := a.Probabilities
	p[ls[0]], p[ls[1]] = p[ls[1]], p[ls[0]]
	a.Label = ls[1]
	a.Value = p[ls[1]]
}

// pickVerdict finds the item whose verdict margin is smallest (near) or
// largest (confident).
func pickVerdict(r *receipts.Receipt, confident bool) (item int, margin float64) {
	best := -1
	for i, it := range r.Items {
		a, _ := it.Answer("verdict")
		m := a.Margin()
		if m == 0 {
			continue
		}
		if best < 0 || (confident && m > margin) || (!confident && m < margin) {
			best, margin = i, m
		}
	}
	return best, margin
}

func setNoul(r *receipts.Receipt, item int, delta float64) {
	for j := range r.Items[item].Answers {
		a := &r.Items[item].Answers[j]
		if a.Kind == judgments.Noul {
			p := a.Value + delta
			if p > 1 {
				p = a.Value - delta
			}
			a.Value, a.Confidence = p, max(p, 1-p)
			a.Probabilities = map[string]float64{"false": 1 - p, "true": p}
			return
		}
	}
}

func TestCompareControlsExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := write(t, dir, "base.json", baseline(t))

	confident := baseline(t)
	ci, cm := pickVerdict(confident, true)
	require.Greater(t, cm, 0.9)
	a := &confident.Items[ci].Answers[1]
	swapTop(a)

	near := baseline(t)
	ni, nm := pickVerdict(near, false)
	require.Less(t, nm, 0.1)
	swapTop(&near.Items[ni].Answers[1])

	noul2 := baseline(t)
	setNoul(noul2, 0, 0.002)
	noul05 := baseline(t)
	setNoul(noul05, 0, 0.0005)

	drift := baseline(t)
	drift.Pins.Model = "google/gemma-4-31B-it-FP8"
	drift.Pins.Served[0].ID, drift.Pins.Served[0].Root = drift.Pins.Model, drift.Pins.Model

	cases := []struct {
		name string
		cand *receipts.Receipt
		args []string
		code int
	}{
		{"unchanged", baseline(t), nil, exitPass},
		{"confident move", confident, nil, exitFail},
		{"near-tie move", near, nil, exitPass},
		{"near-tie move strict", near, []string{"-policy", "strict"}, exitFail},
		{"near-tie move, tighter margin", near, []string{"-near-tie", "0.01"}, exitFail},
		{"noul 0.002", noul2, nil, exitFail},
		{"noul 0.0005", noul05, nil, exitPass},
		{"noul 0.002 with -noul-tol 0.003", noul2, []string{"-noul-tol", "0.003"}, exitPass},
		{"identity drift", drift, nil, exitNoVerdict},
		{"identity drift allowed", drift, []string{"-allow-identity-drift"}, exitPass},
	}
	for i, c := range cases {
		cand := write(t, dir, "cand"+string(rune('a'+i))+".json", c.cand)
		args := append([]string{"compare"}, c.args...)
		args = append(args, base, cand)
		stdout, stderr, code := run(t, args...)
		require.Equal(t, c.code, code, "%s\nstdout:\n%s\nstderr:\n%s", c.name, stdout, stderr)
		// Flags after the positional arguments work too.
		args = append([]string{"compare", base, cand}, c.args...)
		_, _, code2 := run(t, args...)
		require.Equal(t, code, code2, c.name)
	}
}

func TestCompareBrokenReceiptNamesFileAndField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := write(t, dir, "base.json", baseline(t))
	data, err := os.ReadFile(base)
	require.NoError(t, err)
	// Cut halfway (inside the items, which are most of the file), just
	// after a key's colon, so the reader stops inside an item whatever
	// the receipt's length: between two items the path is only "items".
	half := len(data) / 2
	colon := bytes.Index(data[half:], []byte(`": `))
	require.GreaterOrEqual(t, colon, 0)
	cut := filepath.Join(dir, "cut.json")
	require.NoError(t, os.WriteFile(cut, data[:half+colon+3], 0o644))
	_, stderr, code := run(t, "compare", base, cut)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "vetbench compare: candidate: "+cut+":")
	require.Contains(t, stderr, "items[")
	require.Contains(t, stderr, "unexpected end of document")
}

func TestCompareLevelsAndSweepDirs(t *testing.T) {
	t.Parallel()
	// One sweep: typevet's signature subset at c=1, 16, 32.
	sweep := t.TempDir()
	for _, n := range []string{"signature_match_vllm_throughput_c1.json", "signature_match_vllm_throughput_c16.json", "signature_match_vllm_throughput_c32.json"} {
		data, err := os.ReadFile(tv(n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(sweep, n), data, 0o644))
	}
	stdout, stderr, code := run(t, "compare", "-levels", sweep)
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "signatures   c=16  vs c=1    PASS  items 60, moved 1 (1 near-tie, 0 confident)")
	require.Contains(t, stdout, "signatures   c=32  vs c=1    PASS  items 60, moved 2 (2 near-tie, 0 confident)")
	_, _, code = run(t, "compare", "-levels", "-policy", "strict", sweep)
	require.Equal(t, exitFail, code)

	// Sweep against sweep: the same directory passes; a sweep missing a
	// level cannot be fully compared.
	_, stderr, code = run(t, "compare", sweep, sweep)
	require.Equal(t, exitPass, code, stderr)
	partial := t.TempDir()
	data, err := os.ReadFile(tv("signature_match_vllm_throughput_c1.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(partial, "c1.json"), data, 0o644))
	stdout, _, code = run(t, "compare", sweep, partial)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stdout, "NOT COMPARED: set signatures c=16: no candidate receipt")
}
