package report

import (
	"bytes"
	"encoding/csv"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.*")

func load(t *testing.T, dir, label string) *Run {
	t.Helper()
	r, err := Load(filepath.Join("testdata", dir), label)
	require.NoError(t, err)
	return r
}

func build(t *testing.T, base, cand *Run) *Report {
	t.Helper()
	rep, err := Build(base, cand, DefaultOptions())
	require.NoError(t, err)
	return rep
}

func html(t *testing.T, rep *Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, rep.WriteHTML(&b))
	return b.String()
}

func csvs(t *testing.T, rep *Report) map[string][][]string {
	t.Helper()
	files, err := rep.CSVFiles()
	require.NoError(t, err)
	out := map[string][][]string{}
	for _, f := range files {
		recs, err := csv.NewReader(bytes.NewReader(f.Data)).ReadAll()
		require.NoError(t, err, f.Name)
		out[f.Name] = recs
	}
	return out
}

// pageHas and pageLacks check a page for a string, naming only the
// string when they fail (a page is too long to print).
func pageHas(t *testing.T, page, want string, msg ...any) {
	t.Helper()
	if !strings.Contains(page, want) {
		t.Fatalf("page lacks %q %v", want, msg)
	}
}

func pageLacks(t *testing.T, page, unwanted string, msg ...any) {
	t.Helper()
	if strings.Contains(page, unwanted) {
		t.Fatalf("page holds %q %v", unwanted, msg)
	}
}

// checkGolden compares got with testdata/name; -update rewrites it
// (never under CI=true).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	want, err := os.ReadFile(path)
	if string(want) == got {
		return
	}
	if *update {
		require.NotEqual(t, "true", os.Getenv("CI"), "refusing -update under CI=true (%s differs)", path)
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	require.NoError(t, err, "missing golden; run go test ./receipts/report -update")
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("%s differs from line %d:\nwant %q\ngot  %q\n(if intended: go test ./receipts/report -update)", path, i+1, w, g)
		}
	}
}

// TestGoldenReport: the page and the CSV files of a small baseline and a
// slowed candidate with one failing judgment per point.
func TestGoldenReport(t *testing.T) {
	t.Parallel()
	rep := build(t, load(t, "base", "baseline"), load(t, "cand", "candidate"))
	page := html(t, rep)
	checkGolden(t, "pair.golden.html", page)
	files, err := rep.CSVFiles()
	require.NoError(t, err)
	var all strings.Builder
	for _, f := range files {
		all.WriteString("== " + f.Name + "\n")
		all.Write(f.Data)
	}
	checkGolden(t, "pair.golden.csv.txt", all.String())

	// What the golden must show, independent of its bytes.
	pageLacks(t, page, "<script")
	offline := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, ref := range []string{"http://", "https://", "src=", "url(", "@import", "<link"} {
		pageLacks(t, offline, ref, "nothing fetched: no network reference besides the SVG namespace")
	}
	pageHas(t, page, `<svg xmlns="http://www.w3.org/2000/svg"`)
	require.Equal(t, 4*2, strings.Count(page, `<svg xmlns=`), "four charts per set")
	pageLacks(t, page, "Identity mismatch")
	c := csvs(t, rep)
	require.Equal(t, []string{"candidate", "cold", "4", "6", "1", "0", "—", "ok", "ok (0.0%)", "ok", "0"}, c["checks_checks.csv"][5], "the failed judgment shows")
	pageHas(t, page, `<td class="bad n">1</td>`)
	require.Equal(t, "FAIL", c["answers_checks.csv"][1][3])
	require.Contains(t, c["answers_checks.csv"][1][9], "item r00:unsigned: failed in the candidate")
}

// TestSingleRun: one run gets curves and its levels compared with c=1;
// no cross-run table, no gate.
func TestSingleRun(t *testing.T) {
	t.Parallel()
	rep := build(t, load(t, "base", "run"), nil)
	page := html(t, rep)
	pageHas(t, page, "run: answers at each level vs c=1")
	pageLacks(t, page, "speed gate")
	c := csvs(t, rep)
	require.NotContains(t, c, "gate.csv")
	require.Len(t, c["speed_checks.csv"], 1+3)
	require.Len(t, c["answers_signatures.csv"], 1+2, "c=4 and c=16 against c=1")
}

// cloneRun copies a run so a test can change its receipts.
func cloneRun(r *Run, label string) *Run {
	out := *r
	out.Label = label
	out.Entries = nil
	for _, e := range r.Entries {
		out.Entries = append(out.Entries, Entry{File: e.File, Receipt: e.Receipt.Clone()})
	}
	return &out
}

func receiptAt(t *testing.T, r *Run, set string, c int) *receipts.Receipt {
	t.Helper()
	rc, ok := r.point(Key{Set: set, Arm: "cold", C: c})
	require.True(t, ok)
	return rc
}

// flipVerdict moves the verdict of item to the runner-up label.
func flipVerdict(t *testing.T, rc *receipts.Receipt, item, question string) (from, to string) {
	t.Helper()
	for i := range rc.Items {
		if rc.Items[i].ID != item {
			continue
		}
		for j := range rc.Items[i].Answers {
			a := &rc.Items[i].Answers[j]
			if a.Question != question {
				continue
			}
			second := ""
			for _, l := range a.Labels {
				if l != a.Label && (second == "" || a.Probabilities[l] > a.Probabilities[second]) {
					second = l
				}
			}
			from, to = a.Label, second
			a.Probabilities[from], a.Probabilities[to] = a.Probabilities[to], a.Probabilities[from]
			a.Label = to
			return from, to
		}
	}
	t.Fatalf("no %s / %s", item, question)
	return "", ""
}

// TestMovedAnswerListed: a confident verdict moved in the candidate at
// c=4 is listed with its item, question, labels and class, and only
// there; the unchanged copy lists nothing.
func TestMovedAnswerListed(t *testing.T) {
	t.Parallel()
	base := load(t, "base", "baseline")
	same := cloneRun(base, "candidate")
	rep := build(t, base, same)
	require.Len(t, csvs(t, rep)["moved_checks.csv"], 1, "control: an unchanged copy moves nothing")
	pageLacks(t, html(t, rep), `class="bad n">confident</td>`)

	cand := cloneRun(base, "candidate")
	from, to := flipVerdict(t, receiptAt(t, cand, "checks", 4), "r00:clean", "verdict")
	rep = build(t, base, cand)
	moved := csvs(t, rep)["moved_checks.csv"]
	// Moved against the baseline at c=4, and against the candidate's own
	// c=1; nowhere else.
	require.Len(t, moved, 3, "exactly the moved answer: %v", moved)
	require.Equal(t, []string{"candidate vs baseline", "cold", "4 vs 4", "r00:clean", "verdict", from + " → " + to, "confident"}, moved[1][:7])
	require.Equal(t, []string{"candidate vs its c=1", "cold", "4 vs 1", "r00:clean", "verdict", from + " → " + to, "confident"}, moved[2][:7])
	page := html(t, rep)
	pageHas(t, page, "<td class=\"n\">"+from+" → "+to+"</td><td class=\"bad n\">confident</td>")
	require.Equal(t, "FAIL", csvs(t, rep)["answers_checks.csv"][2][3])
	pageHas(t, page, "candidate vs its c=1")
}

// TestIdentityMismatchBanner: runs of different models get the banner,
// no answer comparison and no speed verdict; the same runs without the
// change get none of that.
func TestIdentityMismatchBanner(t *testing.T) {
	t.Parallel()
	base := load(t, "base", "baseline")
	cand := load(t, "cand", "candidate")
	pageLacks(t, html(t, build(t, base, cand)), "Identity mismatch")

	other := cloneRun(cand, "candidate")
	for _, e := range other.Entries {
		e.Receipt.Pins.Model = "google/gemma-4-31B-it-FP8"
		e.Receipt.Pins.Served = nil
	}
	rep := build(t, base, other)
	page := html(t, rep)
	pageHas(t, page, `<div class="banner bad"><strong>Identity mismatch: the two runs are not the same experiment</strong>`)
	pageHas(t, page, "<li>model: google/gemma-4-31B-it → google/gemma-4-31B-it-FP8 (every point)</li>")
	c := csvs(t, rep)
	require.Equal(t, "NOT COMPARED", c["answers_checks.csv"][1][3])
	require.Contains(t, c["answers_checks.csv"][1][9], "identity mismatch")
	require.Equal(t, []string{"baseline vs candidate: speed gate", "NOT COMPARABLE", "identity differs: no verdict"}, c["summary.csv"][4])
	pageHas(t, page, "NOT COMPARABLE: the runs&#39; identities differ")
	require.Equal(t, "1 fields differ", c["identity.csv"][1][3])

	// -allow-identity-drift: compared anyway, the banner says so.
	opt := DefaultOptions()
	opt.Answers.AllowIdentityDrift = true
	rep, err := Build(base, other, opt)
	require.NoError(t, err)
	page = html(t, rep)
	pageHas(t, page, "Identity drift allowed")
	require.Equal(t, "FAIL", csvs(t, rep)["answers_checks.csv"][1][3])
}

// TestTimeScaleLabelled: a time-scaled twin's figures say so on the
// charts and in the runs table.
func TestTimeScaleLabelled(t *testing.T) {
	t.Parallel()
	base := cloneRun(load(t, "base", "run"), "run")
	for _, e := range base.Entries {
		e.Receipt.Target.TimeScale = 10
	}
	page := html(t, build(t, base, nil))
	pageHas(t, page, "time-scaled twin (run ×10): not real-time figures")
	pageHas(t, page, "×10 (time-scaled twin: rates ×10, latencies ÷10 of model time)")
	pageLacks(t, html(t, build(t, load(t, "base", "run"), nil)), "time-scaled twin (")
}

func TestLoadLayouts(t *testing.T) {
	t.Parallel()
	bench := load(t, "base", "b")
	require.Equal(t, filepath.Join("testdata", "base", "receipts"), bench.ReceiptDir)
	require.NotNil(t, bench.Bench)
	plain, err := Load(filepath.Join("testdata", "base", "receipts"), "p")
	require.NoError(t, err)
	require.Nil(t, plain.Bench, "a plain receipt directory has no bench.txt")
	require.Len(t, plain.Entries, 6)
	require.Equal(t, "checks c=1", plain.Entries[0].Key().String())
	require.Equal(t, "signatures c=16", plain.Entries[5].Key().String())
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	_, err := Load(empty, "x")
	require.ErrorContains(t, err, "no receipts (*.json)")
	_, err = Load(filepath.Join(empty, "nope"), "x")
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = Load(filepath.Join("testdata", "README.md"), "x")
	require.ErrorContains(t, err, "is not a directory")

	data, err := os.ReadFile(filepath.Join("testdata", "base", "receipts", "checks_c1.json"))
	require.NoError(t, err)
	bad := t.TempDir()
	broken := bytes.Replace(data, []byte(`"judgments_per_second": `), []byte(`"judgments_per_second": "fast", "x": `), 1)
	require.NotEqual(t, data, broken)
	require.NoError(t, os.WriteFile(filepath.Join(bad, "checks_c1.json"), broken, 0o644))
	_, err = Load(bad, "x")
	require.ErrorContains(t, err, "checks_c1.json")
	require.ErrorContains(t, err, "throughput.judgments_per_second")

	dup := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dup, "a.json"), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dup, "b.json"), data, 0o644))
	_, err = Load(dup, "x")
	require.ErrorContains(t, err, "a.json and "+filepath.Join(dup, "b.json")+" are both checks c=1")

	trunc := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(trunc, "checks_c1.json"), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(trunc, "bench.txt"), []byte("BenchmarkJudgments/set=checks/c=1-2 1 62.66\n"), 0o644))
	_, err = Load(trunc, "x")
	require.ErrorContains(t, err, "bench.txt")
	require.ErrorContains(t, err, "receipts without the speed gate")
}

func TestReportCheck(t *testing.T) {
	t.Parallel()
	rep := &Report{Sections: []Section{{ID: "a", Tables: []Table{{CSV: "x.csv", Header: []string{"h"}}}}, {ID: "a"}}}
	require.ErrorContains(t, rep.WriteHTML(new(bytes.Buffer)), "duplicate id")
	rep.Sections[1] = Section{ID: "b", Tables: []Table{{CSV: "../x.csv"}}}
	_, err := rep.CSVFiles()
	require.ErrorContains(t, err, "not a plain *.csv name")
	rep.Sections[1] = Section{ID: "b", Tables: []Table{{CSV: "y.csv", Header: []string{"a", "b"}, Rows: [][]Cell{{{Text: "1"}}}}}}
	_, err = rep.CSVFiles()
	require.ErrorContains(t, err, "row 0 has 1 cells for 2 columns")
}

// TestTroubleVisible: a stopped point, failed self-checks and receipt
// warnings show on the page, in the CSV and in the summary; the clean run
// they were made from shows none of them.
func TestTroubleVisible(t *testing.T) {
	t.Parallel()
	run := cloneRun(load(t, "base", "run"), "run")
	clean := csvs(t, build(t, run, nil))
	require.Equal(t, "clean", clean["summary.csv"][2][1])

	rc := receiptAt(t, run, "checks", 16)
	rc.Stopped = &receipts.Stopped{Index: 3, Item: "r00:unsigned", Question: "legibility", Reason: "error", Message: "HTTP 500", Discarded: 2}
	rc.Throughput.Discarded = 2
	rc.Throughput.Failed, rc.Throughput.FailedByClass = 3, map[string]int{"http_500": 2, "timeout": 1}
	rc.Checks.LittlesLaw.OK = false
	rc.Checks.LittlesLaw.Problems = []string{"mean in flight 3.1 vs predicted 4.0 (22% off): the latency clock misses part of each judgment"}
	rc.Checks.Reconciliation.OK = false
	rc.Checks.Reconciliation.Verdict = "shared server or lost requests"
	rc.Checks.Reconciliation.Detail = "server finished 30 requests, client sent 28"
	rc.Warnings = []string{"cold arm, but the prefix cache was not reset: dev mode off"}
	rep := build(t, run, nil)
	c := csvs(t, rep)
	require.Equal(t, []string{"run", "cold", "16", "7", "3 (2 http_500, 1 timeout)", "2",
		"error at r00:unsigned / legibility (#3): HTTP 500; 2 discarded", "ok",
		"mean in flight 3.1 vs predicted 4.0 (22% off): the latency clock misses part of each judgment",
		"shared server or lost requests: server finished 30 requests, client sent 28", "1"}, c["checks_checks.csv"][3])
	require.Equal(t, []string{"run: failures and self-checks", "trouble", "6 points; 3 failed judgments, 2 discarded, 1 points stopped early, 1 with a failed self-check"}, c["summary.csv"][2])
	require.Equal(t, [][]string{{"warning"}, {"run checks c=16: cold arm, but the prefix cache was not reset: dev mode off"}}, c["warnings.csv"])
	page := html(t, rep)
	pageHas(t, page, `<td class="bad">error at r00:unsigned / legibility (#3): HTTP 500; 2 discarded</td>`)
	pageHas(t, page, `<td class="bad">3 (2 http_500, 1 timeout)</td>`)
	pageHas(t, page, `<td class="bad">shared server or lost requests: server finished 30 requests, client sent 28</td>`)
	pageHas(t, page, `<a href="#warnings">Warnings (1)</a>`)
	pageHas(t, page, "<li>run checks c=16: cold arm, but the prefix cache was not reset: dev mode off</li>")
	require.Contains(t, c["answers_checks.csv"][2][9], "candidate stopped at item r00:unsigned", "a stopped point fails its comparison with c=1 (receipts/answers)")
}

// TestPrefixCountingNote: a baseline and a candidate on either side of
// vllm#48860 say so next to their hit rates.
func TestPrefixCountingNote(t *testing.T) {
	t.Parallel()
	base := load(t, "base", "baseline")
	cand := load(t, "cand", "candidate")
	pageLacks(t, html(t, build(t, base, cand)), "vllm#48860", "same build on both sides")
	old := cloneRun(base, "baseline")
	for _, e := range old.Entries {
		e.Receipt.Pins.ServerBuild = "0.25.1"
	}
	opt := DefaultOptions()
	opt.Answers.AllowIdentityDrift = true // the build is part of the identity
	rep, err := Build(old, cand, opt)
	require.NoError(t, err)
	page := html(t, rep)
	pageHas(t, page, "Prefix hit rates cross vllm#48860 (baseline vLLM 0.25.1, candidate vLLM 0.30.0&#43;vetbench.twin)")
}

// movedBars are the moved-verdicts chart's bars of set: "group c" →
// [confident, near-tie].
func movedBars(t *testing.T, rep *Report, set string) map[string][]float64 {
	t.Helper()
	for _, s := range rep.Sections {
		for _, ch := range s.Charts {
			if bc, ok := ch.(BarChart); ok && bc.Title == set+": verdicts moved" {
				out := map[string][]float64{}
				for _, b := range bc.Bars {
					out[b.Group+" "+b.Category] = b.Values
				}
				return out
			}
		}
	}
	t.Fatalf("no moved chart for %s", set)
	return nil
}

// TestMovedChartSplitsNearTies: a moved verdict is drawn as confident or
// near-tie as receipts/answers classifies it — the same flip is confident
// under the default policy and near-tie under a margin that covers it —
// and an unchanged copy draws empty bars.
func TestMovedChartSplitsNearTies(t *testing.T) {
	t.Parallel()
	base := load(t, "base", "baseline")
	same := movedBars(t, build(t, base, cloneRun(base, "candidate")), "checks")
	require.Equal(t, []float64{0, 0}, same["candidate vs baseline 4"], "control: nothing moved")

	cand := cloneRun(base, "candidate")
	flipVerdict(t, receiptAt(t, cand, "checks", 4), "r00:clean", "verdict")
	bars := movedBars(t, build(t, base, cand), "checks")
	require.Equal(t, []float64{1, 0}, bars["candidate vs baseline 4"], "confident")
	require.Equal(t, []float64{1, 0}, bars["candidate vs its c=1 4"])
	require.Equal(t, []float64{0, 0}, bars["candidate vs baseline 16"])

	opt := DefaultOptions()
	opt.Answers.NearTieMargin = 1 // every margin is below it
	rep, err := Build(base, cand, opt)
	require.NoError(t, err)
	require.Equal(t, []float64{0, 1}, movedBars(t, rep, "checks")["candidate vs baseline 4"], "near-tie")
	pageHas(t, html(t, rep), "near-tie (margin &lt; 1), does not fail: 2")
}
