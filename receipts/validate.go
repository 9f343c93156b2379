package receipts

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// SumTolerance is how far an answer's probabilities may sum from 1.
const SumTolerance = 1e-6

// maxValidationErrors caps how many problems Validate lists.
const maxValidationErrors = 20

// Validate reports what makes a receipt unusable, naming each field by
// its path. The error joins one *SchemaError per problem (at most 20).
func (r *Receipt) Validate() error { return r.validate("") }

// Problems gathers the validation problems of one document, each a
// *SchemaError of File, at most 20 listed; every receipt-like document
// (receipts, token receipts, matrices) reports through it, so every
// message and path is clipped the same way.
type Problems struct {
	File string
	errs []error
	more int
}

// Add records a problem at path (a field path such as items[3].answers[1]).
func (p *Problems) Add(path, format string, args ...any) {
	if len(p.errs) >= maxValidationErrors {
		p.more++
		return
	}
	// Clipped: a message may quote values of the file, a path a key of
	// it, and either may be megabytes long.
	msg := fmt.Sprintf(format, jsontree.ClipArgs(64, args)...)
	p.errs = append(p.errs, &SchemaError{File: p.File, Path: jsontree.Clip(path, 1024), Msg: jsontree.Clip(msg, 1024)})
}

// Err joins the problems recorded (nil when none).
func (p *Problems) Err() error {
	if p.more > 0 {
		p.errs = append(p.errs, &SchemaError{File: p.File, Msg: fmt.Sprintf("… and %d more problems", p.more)})
	}
	return errors.Join(p.errs...)
}

func (r *Receipt) validate(file string) error {
	p := &Problems{File: file}
	if r == nil {
		p.Add("", "no receipt")
		return p.Err()
	}
	if r.Schema != Schema {
		p.Add("schema", "%q is not %q", r.Schema, Schema)
	}
	switch r.Source {
	case SourceVetbench, SourceTypevet:
	default:
		p.Add("source", "unknown source %q (want %s or %s)", r.Source, SourceVetbench, SourceTypevet)
	}
	if r.Set == "" {
		p.Add("set", "empty")
	}
	if !r.Started.IsZero() && !r.Finished.IsZero() && r.Finished.Before(r.Started) {
		p.Add("finished_utc", "%s is before started_utc %s", r.Finished, r.Started)
	}
	r.validateTarget(p)
	r.validatePins(p)
	r.validateIdentity(p)
	r.validateThroughput(p)
	r.validateServer(p)
	r.validateEndpoints(p)
	r.validateItems(p)
	r.validateTotals(p)
	r.validateOffFormat(p)
	r.validateStopped(p)
	return p.Err()
}

func (r *Receipt) validateTarget(p *Problems) {
	switch r.Target.Kind {
	case TargetLive, TargetContainer, TargetInProcess, TargetTypevet:
	default:
		p.Add("target.kind", "unknown target kind %q", r.Target.Kind)
	}
	if bad(r.Target.TimeScale) || r.Target.TimeScale < 0 {
		p.Add("target.time_scale", "%v is not a finite number >= 0", r.Target.TimeScale)
	}
	if r.Target.Endpoint != "" {
		if u, err := url.Parse(r.Target.Endpoint); err == nil && u.User != nil {
			p.Add("target.endpoint", "holds credentials; receipts never do")
		}
	}
	for i, e := range r.Target.Endpoints {
		if u, err := url.Parse(e); err == nil && u.User != nil {
			p.Add(joinIndex("target.endpoints", i), "holds credentials; receipts never do")
		}
	}
}

func (r *Receipt) validatePins(p *Problems) {
	pins := r.Pins
	if pins.Model == "" {
		p.Add("pins.model", "empty")
	}
	if _, err := judgments.ParseMode(pins.ScoringMode); err != nil {
		p.Add("pins.scoring_mode", "%v", err)
	}
	if pins.TopLogprobs < 0 || (pins.ScoringMode == string(judgments.ModeTopLogprobs) && pins.TopLogprobs < 1) {
		p.Add("pins.top_logprobs", "%d; top_logprobs mode needs k >= 1", pins.TopLogprobs)
	}
	for _, k := range sortedKeys(pins.Controls) {
		if pins.Controls[k] < 0 {
			p.Add(joinKey("pins.control_token_ids", k), "negative token id %d", pins.Controls[k])
		}
	}
	// An open loop's concurrency is its cap, 0 for none.
	if open := pins.Load != nil && pins.Load.Mode == LoadOpen; pins.Concurrency < 1 && !(open && pins.Concurrency == 0) {
		p.Add("pins.concurrency", "%d is below 1", pins.Concurrency)
	}
	switch pins.QuestionDispatch {
	case "", DispatchSequential, DispatchFanOut, DispatchTypevet:
	default:
		p.Add("pins.question_dispatch", "%q: want %s, %s or %s", pins.QuestionDispatch, DispatchSequential, DispatchFanOut, DispatchTypevet)
	}
	for i, s := range pins.Served {
		if s.ID == "" {
			p.Add(joinIndex("pins.served", i)+".id", "empty")
		}
		if s.MaxModelLen < 0 {
			p.Add(joinIndex("pins.served", i)+".max_model_len", "negative")
		}
	}
	if pins.Fixture.Items < 0 {
		p.Add("pins.fixture.items", "negative")
	}
	if s := pins.Fixture.SliceSHA256; s != "" && !isDigest(s) {
		p.Add("pins.fixture.slice_sha256", "%q is not a hex sha256", s)
	}
}

func isDigest(s string) bool { return len(s) == 64 && isHex(s) }

func (r *Receipt) validateIdentity(p *Problems) {
	id := r.Identity
	if len(id.PromptDigests) == 0 {
		p.Add("identity.prompt_digests", "empty")
	}
	for _, k := range sortedKeys(id.PromptDigests) {
		if !isDigest(id.PromptDigests[k]) {
			p.Add(joinKey("identity.prompt_digests", k), "%q is not a hex sha256", id.PromptDigests[k])
		}
	}
	for _, k := range sortedKeys(id.FixtureDigests) {
		if !isDigest(id.FixtureDigests[k]) {
			p.Add(joinKey("identity.fixture_digests", k), "%q is not a hex sha256", id.FixtureDigests[k])
		}
	}
	if id.Digest != "" {
		if want := r.IdentityDigest(); id.Digest != want {
			p.Add("identity.digest", "%s does not match the identity fields (computed %s): the receipt was edited", short(id.Digest), short(want))
		}
	}
}

func (r *Receipt) validateThroughput(p *Problems) {
	t := r.Throughput
	open := r.Pins.Load != nil && r.Pins.Load.Mode == LoadOpen
	switch {
	case open && t.Concurrency < 0:
		p.Add("throughput.concurrency", "%d is below 0 (an open loop's cap; 0 = none)", t.Concurrency)
	case open && t.Concurrency != r.Pins.Load.MaxConcurrency:
		p.Add("throughput.concurrency", "%d but pins.load.max_concurrency is %d", t.Concurrency, r.Pins.Load.MaxConcurrency)
	case !open && t.Concurrency < 1:
		p.Add("throughput.concurrency", "%d is below 1", t.Concurrency)
	}
	if t.Concurrency != r.Pins.Concurrency {
		p.Add("throughput.concurrency", "%d but pins.concurrency is %d", t.Concurrency, r.Pins.Concurrency)
	}
	type num struct {
		path string
		v    float64
	}
	for _, f := range []num{
		{"throughput.wall_seconds", t.WallSeconds},
		{"throughput.judgments_per_second", t.JudgmentsPerSecond},
		{"throughput.images_per_second", t.ImagesPerSecond},
		{"throughput.latency_seconds.mean", t.Latency.Mean},
		{"throughput.latency_seconds.p50", t.Latency.P50},
		{"throughput.latency_seconds.p95", t.Latency.P95},
		{"throughput.latency_seconds.p99", t.Latency.P99},
	} {
		if bad(f.v) || f.v < 0 {
			p.Add(f.path, "%v is not a finite number >= 0", f.v)
		}
	}
	type count struct {
		path string
		n    int
	}
	for _, c := range []count{
		{"throughput.judgments", t.Judgments},
		{"throughput.images", t.Images},
		{"throughput.requests", t.Requests},
		{"throughput.failed", t.Failed},
		{"throughput.discarded", t.Discarded},
		{"throughput.prompt_tokens", t.PromptTokens},
		{"throughput.latency_seconds.n", t.Latency.N},
	} {
		if c.n < 0 {
			p.Add(c.path, "negative (%d)", c.n)
		}
	}
	byClass := 0
	for _, k := range sortedKeys(t.FailedByClass) {
		if n := t.FailedByClass[k]; n <= 0 || k == "" {
			p.Add(joinKey("throughput.failed_by_class", k), "%d: want a named class and a count >= 1", n)
		} else {
			byClass += n
		}
	}
	if t.FailedByClass != nil && byClass != t.Failed {
		p.Add("throughput.failed_by_class", "counts sum to %d, but throughput.failed is %d", byClass, t.Failed)
	}
	if t.Latency.P95 < t.Latency.P50 {
		p.Add("throughput.latency_seconds.p95", "%v is below p50 %v", t.Latency.P95, t.Latency.P50)
	}
	if t.Latency.P99 < t.Latency.P95 {
		p.Add("throughput.latency_seconds.p99", "%v is below p95 %v", t.Latency.P99, t.Latency.P95)
	}
	r.validateLoad(p)
}

// validateLoad checks the open loop's block and figures and the SLO block.
func (r *Receipt) validateLoad(p *Problems) {
	if l := r.Pins.Load; l != nil {
		switch {
		case l.Mode != LoadOpen && l.Mode != LoadClosed:
			p.Add("pins.load.mode", "%q: want %s or %s", l.Mode, LoadOpen, LoadClosed)
		case l.Mode == LoadOpen && (bad(l.Rate) || !(l.Rate > 0)):
			p.Add("pins.load.rate", "%v: an open loop has a finite rate > 0", l.Rate)
		}
	}
	for name, q := range map[string]*Latency{"throughput.client_queue_seconds": r.Throughput.ClientQueue, "throughput.response_seconds": r.Throughput.Response,
		"throughput.arrival_lag_seconds": r.Throughput.ArrivalLag} {
		if q != nil && (bad(q.Mean) || q.Mean < 0 || q.P50 < 0 || q.P95 < q.P50 || q.P99 < q.P95) {
			p.Add(name, "%+v: want finite figures >= 0 with p50 <= p95 <= p99", *q)
		}
	}
	if s := r.Throughput.SLO; s != nil {
		switch {
		case bad(s.LatencySeconds) || !(s.LatencySeconds > 0):
			p.Add("throughput.slo.latency_seconds", "%v is not a target > 0", s.LatencySeconds)
		case s.Within < 0 || s.Within > s.Of:
			p.Add("throughput.slo.within", "%d of %d", s.Within, s.Of)
		case bad(s.Goodput) || s.Goodput < 0 || s.Goodput > 1:
			p.Add("throughput.slo.goodput", "%v is not a share from 0 to 1", s.Goodput)
		case bad(s.Target) || s.Target < 0 || s.Target > 1:
			p.Add("throughput.slo.target", "%v is not a share from 0 to 1", s.Target)
		}
	}
	for i, it := range r.Items {
		if bad(it.QueueSeconds) || it.QueueSeconds < 0 {
			p.Add(joinIndex("items", i)+".queue_seconds", "%v is not a finite number >= 0", it.QueueSeconds)
		}
		if bad(it.ArrivalLagSeconds) || it.ArrivalLagSeconds < 0 {
			p.Add(joinIndex("items", i)+".arrival_lag_seconds", "%v is not a finite number >= 0", it.ArrivalLagSeconds)
		}
	}
}

func (r *Receipt) validateServer(p *Problems) {
	s := r.Server
	if s == nil {
		return
	}
	rate := func(path string, v *float64) {
		if v != nil && (bad(*v) || *v < 0 || *v > 1) {
			p.Add(path, "%v is outside [0,1]", *v)
		}
	}
	rate("server.prefix_cache_hit_rate", s.PrefixCacheHitRate)
	rate("server.mm_cache_hit_rate", s.MMCacheHitRate)
	for _, k := range sortedKeys(s.Counters) {
		if bad(s.Counters[k]) {
			p.Add(joinKey("server.counters", k), "not finite")
		}
	}
	for _, k := range sortedKeys(s.Histograms) {
		h := s.Histograms[k]
		if bad(h.Count) || h.Count < 0 || bad(h.Sum) || h.Sum < 0 {
			p.Add(joinKey("server.histograms", k), "count %v and sum %v must be finite and >= 0", h.Count, h.Sum)
		}
	}
}

func (r *Receipt) validateStopped(p *Problems) {
	discarded := 0
	for _, it := range r.Items {
		if it.Discarded {
			discarded++
		}
	}
	s := r.Stopped
	if s == nil {
		if discarded > 0 {
			p.Add("stopped", "null, but %d items are marked discarded", discarded)
		}
		if r.Throughput.Discarded != 0 {
			p.Add("throughput.discarded", "%d, but the run did not stop", r.Throughput.Discarded)
		}
		return
	}
	switch s.Reason {
	case StopError, StopCanceled, StopTimeout:
	default:
		p.Add("stopped.reason", "unknown reason %q (want error, canceled or timeout)", s.Reason)
	}
	if s.Item == "" {
		p.Add("stopped.item", "empty")
	}
	if s.Index < 0 || (r.Pins.Fixture.Items > 0 && s.Index >= r.Pins.Fixture.Items) {
		p.Add("stopped.index", "%d is outside the slice of %d items", s.Index, r.Pins.Fixture.Items)
	}
	// typevet drops what finished after the stop; vetbench keeps it
	// marked, so only vetbench receipts can be checked item by item.
	if r.Source == SourceVetbench && s.Discarded != discarded {
		p.Add("stopped.discarded", "%d, but %d items are marked discarded", s.Discarded, discarded)
	}
	if r.Throughput.Discarded != s.Discarded {
		p.Add("throughput.discarded", "%d, but stopped.discarded is %d", r.Throughput.Discarded, s.Discarded)
	}
}

func (r *Receipt) validateItems(p *Problems) {
	seen := map[string]int{}
	// first answer seen per question, to check kinds and labels agree.
	shapes := map[string]judgments.Answer{}
	for i, it := range r.Items {
		path := joinIndex("items", i)
		if it.ID == "" {
			p.Add(path+".id", "empty")
		} else if j, dup := seen[it.ID]; dup {
			p.Add(path+".id", "duplicate item id %q (also items[%d])", it.ID, j)
		} else {
			seen[it.ID] = i
		}
		if bad(it.LatencySeconds) || it.LatencySeconds < 0 {
			p.Add(path+".latency_seconds", "%v is not a finite number >= 0", it.LatencySeconds)
		}
		if it.InputTokens < 0 {
			p.Add(path+".input_tokens", "negative (%d)", it.InputTokens)
		}
		switch {
		case it.Error != "" && len(it.Answers) > 0:
			p.Add(path+".answers", "a failed item has no answers (it fails closed)")
		case it.Error == "" && !it.Discarded && len(it.Answers) == 0:
			p.Add(path+".answers", "empty, and the item holds no error")
		}
		if it.ErrorClass != "" && it.Error == "" {
			p.Add(path+".error_class", "%q, but the item holds no error", it.ErrorClass)
		}
		for _, q := range sortedKeys(it.Gold) {
			if q == "" || len(it.Gold[q]) == 0 {
				p.Add(joinKey(path+".gold", q), "empty")
			}
		}
		qs := map[string]bool{}
		for j, a := range it.Answers {
			apath := joinIndex(path+".answers", j)
			if qs[a.Question] {
				p.Add(apath+".question", "duplicate question %q", a.Question)
			}
			qs[a.Question] = true
			validateAnswer(p, apath, a)
			if first, ok := shapes[a.Question]; !ok {
				shapes[a.Question] = a
			} else if first.Kind != a.Kind || !slices.Equal(first.Labels, a.Labels) {
				p.Add(apath, "question %q is a %s with labels %v here but a %s with labels %v in an earlier item", a.Question, a.Kind, a.Labels, first.Kind, first.Labels)
			}
		}
	}
	validateGold(p, r.Items, shapes)
}

// validateGold checks that every gold label is one of its question's
// labels: a gold label no answer can take would count every answer wrong,
// and the quality figures would say so without saying why.
func validateGold(p *Problems, items []Item, shapes map[string]judgments.Answer) {
	for i, it := range items {
		for _, q := range sortedKeys(it.Gold) {
			shape, ok := shapes[q]
			if !ok {
				continue // no item answered q: nothing to hold its gold against
			}
			for _, g := range it.Gold[q] {
				if !slices.Contains(shape.Labels, g) {
					p.Add(joinKey(joinIndex("items", i)+".gold", q), "%q is not one of the labels %v", g, shape.Labels)
				}
			}
		}
	}
}

// ValueOnly reports an answer recorded without probabilities: a Score
// imported from a typevet receipt that omitted its level distribution.
// It is compared on its label (level) and value only.
func ValueOnly(a judgments.Answer) bool { return len(a.Probabilities) == 0 }

// validateAnswer checks one answer: its kind and labels, then the label,
// counts and confidence, then its probabilities (or, for a value-only
// score, its value) and the figures that follow from them.
func validateAnswer(p *Problems, path string, a judgments.Answer) {
	if a.Question == "" {
		p.Add(path+".question", "empty")
	}
	switch a.Kind {
	case judgments.Noul, judgments.Choice, judgments.Score:
	default:
		p.Add(path+".kind", "unknown kind %q", a.Kind)
		return
	}
	if len(a.Labels) < 2 {
		p.Add(path+".labels", "%d labels, want at least 2", len(a.Labels))
		return
	}
	labels := validateLabels(p, path, a)
	_, labelOK := labels[a.Label]
	if !labelOK {
		p.Add(path+".label", "%q is not one of the labels %v", a.Label, a.Labels)
	}
	if a.PromptTokens < 0 {
		p.Add(path+".prompt_tokens", "negative (%d)", a.PromptTokens)
	}
	if bad(a.Confidence) || a.Confidence < 0 || a.Confidence > 1 {
		p.Add(path+".confidence", "%v is outside [0,1]", a.Confidence)
	}
	if ValueOnly(a) {
		if a.Kind != judgments.Score {
			p.Add(path+".probabilities", "empty; only a score may be recorded by value alone")
			return
		}
		if hi := float64(len(a.Labels) - 1); bad(a.Value) || a.Value < 0 || a.Value > hi {
			p.Add(path+".value", "%v is outside [0,%v]", a.Value, hi)
		}
		return
	}
	sum, top, ok := validateProbabilities(p, path, a, labels)
	if !ok {
		return // the figures below would only repeat what is wrong
	}
	if math.Abs(sum-1) > SumTolerance {
		p.Add(path+".probabilities", "sum to %v, not 1 within %g", sum, SumTolerance)
	}
	if labelOK && a.Probabilities[a.Label] < top {
		p.Add(path+".label", "%q (p=%v) is not the argmax of its probabilities (max %v)", a.Label, a.Probabilities[a.Label], top)
	}
	if math.Abs(a.Confidence-top) > 1e-9 {
		p.Add(path+".confidence", "%v, but the top probability is %v", a.Confidence, top)
	}
	validateValue(p, path, a, labelOK)
	validateLogprobs(p, path, a)
}

// validateLabels checks the labels are distinct and non-empty, and are
// [false true] for a Noul and "0".."n-1" for a Score; it returns each
// label's index.
func validateLabels(p *Problems, path string, a judgments.Answer) map[string]int {
	labels := map[string]int{}
	for i, l := range a.Labels {
		if l == "" {
			p.Add(joinIndex(path+".labels", i), "empty label")
		}
		if _, dup := labels[l]; dup {
			p.Add(joinIndex(path+".labels", i), "duplicate label %q", l)
		}
		labels[l] = i
	}
	switch a.Kind {
	case judgments.Noul:
		if !slices.Equal(a.Labels, []string{"false", "true"}) {
			p.Add(path+".labels", "%v; a noul has labels [false true]", a.Labels)
		}
	case judgments.Score:
		for i, l := range a.Labels {
			if l != strconv.Itoa(i) {
				p.Add(joinIndex(path+".labels", i), "%q; score levels are \"0\"..\"%d\"", l, len(a.Labels)-1)
				break
			}
		}
	}
	return labels
}

// validateProbabilities checks there is one probability in [0,1] per
// label and none other; it returns their sum and the top one, ok false
// when any entry is wrong.
func validateProbabilities(p *Problems, path string, a judgments.Answer, labels map[string]int) (sum, top float64, ok bool) {
	ok = true
	for _, l := range a.Labels {
		if _, has := a.Probabilities[l]; !has {
			p.Add(path+".probabilities", "no entry for label %q", l)
			ok = false
		}
	}
	top = math.Inf(-1)
	for _, l := range sortedKeys(a.Probabilities) {
		v := a.Probabilities[l]
		if _, has := labels[l]; !has {
			p.Add(joinKey(path+".probabilities", l), "not one of the labels %v", a.Labels)
			ok = false
		}
		if bad(v) || v < 0 || v > 1 {
			p.Add(joinKey(path+".probabilities", l), "%v is not a probability in [0,1]", v)
			ok = false
			continue
		}
		sum += v
		top = max(top, v)
	}
	return sum, top, ok
}

// validateValue checks the value is what the probabilities make it for
// the kind: P(true), the winner's probability, or the expected level.
func validateValue(p *Problems, path string, a judgments.Answer, labelOK bool) {
	switch a.Kind {
	case judgments.Noul:
		if math.Abs(a.Value-a.Probabilities["true"]) > 1e-9 {
			p.Add(path+".value", "%v, but P(true) is %v", a.Value, a.Probabilities["true"])
		}
	case judgments.Choice:
		if labelOK && math.Abs(a.Value-a.Probabilities[a.Label]) > 1e-9 {
			p.Add(path+".value", "%v, but the winner's probability is %v", a.Value, a.Probabilities[a.Label])
		}
	case judgments.Score:
		want := 0.0
		for i, l := range a.Labels {
			want += float64(i) * a.Probabilities[l]
		}
		if math.Abs(a.Value-want) > 1e-6 {
			p.Add(path+".value", "%v, but the expected level is %v", a.Value, want)
		}
	}
}

func validateLogprobs(p *Problems, path string, a judgments.Answer) {
	if len(a.Logprobs) == 0 {
		return
	}
	top := math.Inf(-1)
	for _, l := range sortedKeys(a.Logprobs) {
		v := a.Logprobs[l]
		if _, has := a.Probabilities[l]; !has {
			p.Add(joinKey(path+".logprobs", l), "not one of the labels %v", a.Labels)
			return
		}
		if bad(v) {
			p.Add(joinKey(path+".logprobs", l), "not finite")
			return
		}
		if v > 0 { // a probability above 1: no server sends one
			p.Add(joinKey(path+".logprobs", l), "above 0, not a log-probability")
			return
		}
		top = max(top, v)
	}
	if len(a.Logprobs) != len(a.Labels) {
		p.Add(path+".logprobs", "%d entries for %d labels", len(a.Logprobs), len(a.Labels))
		return
	}
	sum := 0.0
	for _, v := range a.Logprobs {
		sum += math.Exp(v - top)
	}
	for _, l := range sortedKeys(a.Logprobs) {
		want := math.Exp(a.Logprobs[l]-top) / sum
		if math.Abs(want-a.Probabilities[l]) > SumTolerance {
			p.Add(joinKey(path+".probabilities", l), "%v, but its logprob gives %v", a.Probabilities[l], want)
		}
	}
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// validateTotals checks the window's counts against the items they count:
// a receipt that says failed=5 or judgments=999 over clean items would
// otherwise compare PASS on its items while its figures say otherwise.
// Kept items have no error and are not discarded; failed ones have an
// error; discarded ones finished after a stop. A receipt without items
// (a typevet summary) has nothing to count.
func (r *Receipt) validateTotals(p *Problems) {
	if len(r.Items) == 0 {
		return
	}
	var kept, failed int
	for _, it := range r.Items {
		switch {
		case it.Discarded:
		case it.Error != "":
			failed++
		default:
			kept++
		}
	}
	t := r.Throughput
	if t.Judgments != kept {
		p.Add("throughput.judgments", "%d, but %d items are kept (no error, not discarded)", t.Judgments, kept)
	}
	if t.Failed != failed {
		p.Add("throughput.failed", "%d, but %d items failed", t.Failed, failed)
	}
	// discarded: validateStopped checks it against stopped.discarded.
}
