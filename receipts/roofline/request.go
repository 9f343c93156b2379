package roofline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Request is a roofline question as a user states it — a config file, a
// GPU by name or measured peaks, dtypes by name, the deployment and the
// batches — checked once by Resolve. Its errors name the vetbench
// roofline flag each field comes from.
type Request struct {
	Config string // a Hugging Face config.json
	GPU    string // a published peak (LookupGPU); "" with both measured values
	// Bandwidth and FLOPs are measured peaks (0: the table's); they win.
	Bandwidth, FLOPs         float64
	WeightDtype, ExpertDtype string // "" as the config states
	KVDtype                  string
	TP                       int
	// LinkBandwidth and AllReduceLatency replace the table's link (0: keep).
	LinkBandwidth, AllReduceLatency float64
	// SpecTokens 0 is no speculative decoding; SpecAcceptance < 0 unset.
	SpecTokens      int
	SpecAcceptance  float64
	SpecDraftLayers int
	Batches         string // comma-separated batch sizes
	Context         int    // tokens each sequence holds
}

// Plan is a resolved Request: the deployment (shape and GPU set) and the
// batch sizes to analyse.
type Plan struct {
	Deployment
	Batches []int
	Context int
	Config  string
}

// Resolve checks r and reads its config: the plan, or the first thing
// wrong with it (flags before the file, as a user fixes them).
func (r Request) Resolve() (*Plan, error) {
	if r.Config == "" {
		return nil, errors.New("-config: missing (a Hugging Face config.json)")
	}
	hw, err := r.hardware()
	if err != nil {
		return nil, err
	}
	d, err := r.dtypes()
	if err != nil {
		return nil, err
	}
	dep, err := r.deployment()
	if err != nil {
		return nil, err
	}
	if r.LinkBandwidth < 0 || r.AllReduceLatency < 0 {
		return nil, errors.New("-link-bandwidth and -allreduce-latency: want positive values")
	}
	dep.GPU = hw.WithLink(r.LinkBandwidth, r.AllReduceLatency)
	if d.KV, err = ParseKVDtype(r.KVDtype); err != nil {
		return nil, fmt.Errorf("-kv-dtype: %w", err)
	}
	bs, err := ParseBatches(r.Batches)
	if err != nil {
		return nil, fmt.Errorf("-batch: %w", err)
	}
	if r.Context < 0 {
		return nil, fmt.Errorf("-context %d: want at least 0", r.Context)
	}
	cfg, err := ReadConfig(r.Config)
	if err != nil {
		return nil, err
	}
	if dep.Shape, err = NewShape(cfg, d); err != nil {
		return nil, err
	}
	return &Plan{Deployment: dep, Batches: bs, Context: r.Context, Config: r.Config}, nil
}

// Analyse is the plan's report (AnalyseDeployment), naming its config.
func (p *Plan) Analyse() (*Report, error) {
	rep, err := AnalyseDeployment(p.Deployment, p.Batches, p.Context)
	if err != nil {
		return nil, err
	}
	rep.Config = p.Config
	return rep, nil
}

// Utilise reads measured points against the plan's ceilings (Utilise),
// naming its config.
func (p *Plan) Utilise(pts []Observed) (*UtilisationReport, error) {
	u, err := Utilise(p.Shape, p.GPU, pts)
	if err != nil {
		return nil, err
	}
	u.Config = p.Config
	return u, nil
}

// hardware is the GPU of the table with measured values over it, or the
// measured values alone.
func (r Request) hardware() (Hardware, error) {
	if r.Bandwidth < 0 || r.FLOPs < 0 {
		return Hardware{}, errors.New("-bandwidth and -flops: want a positive rate")
	}
	switch {
	case r.GPU != "":
		hw, err := LookupGPU(r.GPU)
		if err != nil {
			return Hardware{}, fmt.Errorf("-gpu: %w", err)
		}
		return hw.WithMeasured(r.Bandwidth, r.FLOPs), nil
	case r.Bandwidth > 0 && r.FLOPs > 0:
		return Custom("measured", r.Bandwidth, r.FLOPs)
	}
	return Hardware{}, errors.New("-gpu: missing (or give both -bandwidth and -flops)")
}

// dtypes are the weight dtypes asked for ("" leaves the config's).
func (r Request) dtypes() (Dtypes, error) {
	var d Dtypes
	var err error
	if r.WeightDtype != "" {
		if d.Weights, err = ParseWeightDtype(r.WeightDtype); err != nil {
			return d, fmt.Errorf("-weight-dtype: %w", err)
		}
	}
	if r.ExpertDtype != "" {
		if d.Experts, err = ParseWeightDtype(r.ExpertDtype); err != nil {
			return d, fmt.Errorf("-expert-dtype: %w", err)
		}
		if d.Weights == "" {
			return d, errors.New("-expert-dtype: give -weight-dtype too (or neither, for the config's own)")
		}
	}
	return d, nil
}

// deployment reads the tensor-parallel and speculative decoding fields.
func (r Request) deployment() (Deployment, error) {
	var d Deployment
	if r.TP < 1 {
		return d, fmt.Errorf("-tp %d: want at least 1", r.TP)
	}
	d.TP = r.TP
	k, a, layers := r.SpecTokens, r.SpecAcceptance, r.SpecDraftLayers
	switch {
	case k < 0:
		return d, fmt.Errorf("-spec-tokens %d: want 0 (none) or more", k)
	case k == 0 && (a >= 0 || layers != 0):
		return d, errors.New("-spec-acceptance and -spec-draft-layers need -spec-tokens")
	case k == 0:
		return d, nil
	case !(a >= 0 && a <= 1):
		return d, errors.New("-spec-acceptance: missing or outside 0..1 (the chance a draft token is accepted)")
	case layers < 0:
		return d, fmt.Errorf("-spec-draft-layers %d: want 0 (the config's) or more", layers)
	}
	d.Spec = &Speculative{Tokens: k, Acceptance: a, DraftLayers: layers}
	return d, nil
}

// ParseBatches reads "1,8,64" into batch sizes ≥ 1.
func ParseBatches(s string) ([]int, error) {
	var bs []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want whole numbers ≥ 1, comma-separated", f)
		}
		bs = append(bs, n)
	}
	return bs, nil
}
