package roofline

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// request is a valid Request on a shipped config; cases change one field.
func request() Request {
	return Request{Config: "testdata/qwen3-0.6b.json", GPU: "h100-sxm", KVDtype: "bf16", TP: 1,
		SpecAcceptance: -1, Batches: "1,8", Context: 1024}
}

func TestRequestResolve(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(*Request)
		err  string // "" resolves
	}{
		{"valid", func(*Request) {}, ""},
		{"measured peaks alone", func(r *Request) { r.GPU, r.Bandwidth, r.FLOPs = "", 1e12, 1e14 }, ""},
		{"speculative", func(r *Request) { r.Config, r.SpecTokens, r.SpecAcceptance = "testdata/deepseek-v4-flash.json", 3, 0.7 }, ""},
		{"no config", func(r *Request) { r.Config = "" }, "-config: missing"},
		{"negative bandwidth", func(r *Request) { r.Bandwidth = -1 }, "-bandwidth and -flops: want a positive rate"},
		{"unknown gpu", func(r *Request) { r.GPU = "a100" }, "-gpu: "},
		{"no gpu, one peak", func(r *Request) { r.GPU, r.Bandwidth = "", 1e12 }, "-gpu: missing (or give both -bandwidth and -flops)"},
		{"bad weight dtype", func(r *Request) { r.WeightDtype = "int3" }, "-weight-dtype: "},
		{"expert dtype alone", func(r *Request) { r.ExpertDtype = "mxfp4" }, "-expert-dtype: give -weight-dtype too"},
		{"tp 0", func(r *Request) { r.TP = 0 }, "-tp 0: want at least 1"},
		{"acceptance without tokens", func(r *Request) { r.SpecAcceptance = 0.5 }, "need -spec-tokens"},
		{"tokens without acceptance", func(r *Request) { r.SpecTokens = 2 }, "-spec-acceptance: missing or outside 0..1"},
		{"negative draft layers", func(r *Request) { r.SpecTokens, r.SpecAcceptance, r.SpecDraftLayers = 2, 0.5, -1 }, "-spec-draft-layers -1"},
		{"negative link", func(r *Request) { r.LinkBandwidth = -1 }, "-link-bandwidth and -allreduce-latency"},
		{"bad kv dtype", func(r *Request) { r.KVDtype = "mxfp4" }, "-kv-dtype: "},
		{"batch 0", func(r *Request) { r.Batches = "1,0" }, `-batch: "0": want whole numbers ≥ 1`},
		{"negative context", func(r *Request) { r.Context = -1 }, "-context -1: want at least 0"},
		{"missing file", func(r *Request) { r.Config = "testdata/nope.json" }, "nope.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := request()
			c.edit(&r)
			p, err := r.Resolve()
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, p.Shape)
			require.Equal(t, []int{1, 8}, p.Batches)
			require.Equal(t, r.SpecTokens > 0, p.Spec != nil)
		})
	}
}

// TestPlanAnalyseAndUtilise: the plan's report and utilisation name its
// config and are the library's own (Analyse, Utilise) figures.
func TestPlanAnalyseAndUtilise(t *testing.T) {
	t.Parallel()
	p, err := request().Resolve()
	require.NoError(t, err)
	rep, err := p.Analyse()
	require.NoError(t, err)
	require.Equal(t, "testdata/qwen3-0.6b.json", rep.Config)
	want, err := AnalyseDeployment(p.Deployment, p.Batches, p.Context)
	require.NoError(t, err)
	require.Equal(t, want.Points, rep.Points)

	ceiling := rep.Points[0].CeilingTokS
	u, err := p.Utilise([]Observed{
		{Label: "half", Phase: PhaseDecode, Batch: 1, Context: 1024, TokS: ceiling / 2, Notes: []string{"a note"}},
		{Label: "double", Phase: PhaseDecode, Batch: 1, Context: 1024, TokS: ceiling * 2},
	})
	require.NoError(t, err)
	require.Equal(t, rep.Config, u.Config)
	require.InDelta(t, 0.5, u.Points[0].Share, 1e-3)
	require.Equal(t, 1, u.AboveCeiling)

	var b bytes.Buffer
	require.NoError(t, u.WriteText(&b, "run.json: token throughput"))
	out := b.String()
	require.Contains(t, out, "receipt   run.json: token throughput, 2 points\n")
	require.Contains(t, out, "note: a note (half)\n")
	require.Contains(t, out, "ABOVE CEILING")
	require.Contains(t, out, "1 point(s) beat the ceiling")
}
