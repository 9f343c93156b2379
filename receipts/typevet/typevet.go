// Package typevet reads the receipts of typevet, the Python system whose
// H100 runs vetbench benchmarks, into vetbench's receipt model, so that
// typevet's history can be a baseline.
//
// It reads the image-set receipts (faces and signatures "pairs", checks
// "cases") using only the fields those files hold. What typevet does not
// record stays empty and counts as unverified in identity comparisons:
// control token ids, server flags, cache config and harness version (and
// the model revision in the 0.4.0 face receipt). Score answers whose level
// distribution the file omits are value-only: compared on level and
// expected level, with no probabilities.
package typevet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/jsontree"
	"github.com/vetbench/vetbench/receipts/tally"
)

// Import reads one typevet receipt. name is the file name used in errors,
// which read "typevet: NAME: PATH: problem", e.g.
// typevet: face_match_vllm_receipt.json: pairs[12]: missing field "same_person_confidence".
// It reads at most receipts.MaxBytes+1 bytes of r.
func Import(r io.Reader, name string) (*receipts.Receipt, error) {
	data, err := receipts.ReadLimitedFrom(r, name)
	if err != nil {
		return nil, fmt.Errorf("typevet: %w", err)
	}
	return decode(data, name)
}

// ReadFile imports the typevet receipt at path (at most receipts.MaxBytes).
func ReadFile(path string) (*receipts.Receipt, error) {
	data, err := receipts.ReadLimited(path)
	if err != nil {
		return nil, fmt.Errorf("typevet: %w", err)
	}
	return decode(data, path)
}

// Format names a receipt's format as sniffed from its top-level keys.
type Format string

// Formats ReadAny tells apart.
const (
	FormatVetbench Format = "vetbench"
	FormatTypevet  Format = "typevet"
)

// Sniff tells a vetbench receipt ("schema" key) from a typevet one
// ("backend" and "pins" keys, no "schema") by its top-level keys. It
// parses under the same depth limit as every reader.
func Sniff(data []byte) (Format, error) {
	tree, err := jsontree.Decode(data)
	if err != nil {
		return "", fmt.Errorf("not a JSON object: %w", err)
	}
	return sniff(tree)
}

func sniff(tree any) (Format, error) {
	top, ok := tree.(*jsontree.Object)
	if !ok {
		return "", fmt.Errorf("not a JSON object: %s", jsontree.KindOf(tree))
	}
	if _, ok := top.Get("schema"); ok {
		return FormatVetbench, nil
	}
	_, backend := top.Get("backend")
	_, pins := top.Get("pins")
	if backend && pins {
		return FormatTypevet, nil
	}
	return "", errors.New("neither a vetbench receipt (no \"schema\") nor a typevet receipt (no \"backend\" and \"pins\")")
}

// ReadAny reads a vetbench receipt or imports a typevet receipt, whichever
// path holds. Both go through the limits of receipts.ReadLimited (size)
// and of the parser (depth): a hostile file is refused before the work.
func ReadAny(path string) (*receipts.Receipt, error) {
	data, err := receipts.ReadLimited(path)
	if err != nil {
		return nil, err
	}
	tree, err := jsontree.Decode(data)
	if err != nil {
		// The vetbench reader names the line, column and field.
		if _, derr := receipts.Decode(data, path); derr != nil {
			return nil, derr
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := sniff(tree)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f == FormatTypevet {
		return decodeTree(tree, path)
	}
	return receipts.Decode(data, path)
}

// ReadDir reads every *.json receipt of either format in dir.
func ReadDir(dir string) ([]*receipts.Receipt, error) {
	return receipts.ReadDirWith(dir, ReadAny)
}

// fail is an error about the file's content. The message is clipped: it
// may quote a value of the file, which may be megabytes long.
func fail(file, path, format string, args ...any) error {
	return fmt.Errorf("typevet: %w", &receipts.SchemaError{File: file, Path: path, Msg: jsontree.Clip(fmt.Sprintf(format, jsontree.ClipArgs(64, args)...), 1024)})
}

func decode(data []byte, name string) (*receipts.Receipt, error) {
	tree, err := jsontree.Decode(data)
	if err != nil {
		var je *jsontree.Error
		if errors.As(err, &je) {
			return nil, fmt.Errorf("typevet: %w", &receipts.SchemaError{File: name, Path: je.Path, Line: je.Line, Column: je.Column, Msg: je.Msg, Err: je.Err})
		}
		return nil, fail(name, "", "%v", err)
	}
	return decodeTree(tree, name)
}

func decodeTree(tree any, name string) (*receipts.Receipt, error) {
	root, ok := tree.(*jsontree.Object)
	if !ok {
		return nil, fail(name, "", "want an object, got %s", jsontree.KindOf(tree))
	}
	top := &object{o: root, file: name}
	im := importer{file: name, top: top}
	rc, err := im.run()
	if err != nil {
		return nil, err
	}
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("typevet: %s: imported receipt is invalid: %w", name, err)
	}
	return rc, nil
}

type importer struct {
	file string
	top  *object
	lay  layout
	rc   *receipts.Receipt
}

func (im *importer) run() (*receipts.Receipt, error) {
	top := im.top
	backend, err := top.str("backend")
	if err != nil {
		return nil, err
	}
	if backend != "vllm" {
		// The llama.cpp backend scores over the full vocabulary; vetbench
		// has no scoring mode for it.
		return nil, fail(im.file, "backend", "%q is not supported (only vllm)", backend)
	}
	model, err := top.str("model")
	if err != nil {
		return nil, err
	}
	identity, err := top.obj("identity")
	if err != nil {
		return nil, err
	}
	digests, err := identity.obj("prompt_digests")
	if err != nil {
		return nil, err
	}
	if err := im.pickLayout(digests); err != nil {
		return nil, err
	}
	im.rc = &receipts.Receipt{
		Schema:   receipts.Schema,
		Source:   receipts.SourceTypevet,
		Set:      im.lay.set,
		Target:   receipts.Target{Kind: receipts.TargetTypevet},
		Identity: receipts.Identity{PromptDigests: map[string]string{}, Upstream: map[string]string{}},
	}
	if err := im.identity(identity, digests); err != nil {
		return nil, err
	}
	im.rc.Identity.Upstream["backend"] = backend
	im.rc.Pins.Model = model
	// typevet on vLLM asks for the candidates by token id (recording no ids),
	// tokenizing every control anew before each judgment: the typevet dispatch.
	im.rc.Pins.ScoringMode, im.rc.Pins.QuestionDispatch = string(judgments.ModeTokenIDs), receipts.DispatchTypevet
	wall, err := top.num("wall_seconds")
	if err != nil {
		return nil, err
	}
	steps := []func() error{func() error { return im.pins(wall) }, im.items, im.stopped, func() error { return im.throughput(wall) }, im.quality}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return im.rc, nil
}

// identity copies the receipt's identity block: the prompt digests, and
// typevet's identity digest, run id and issue where it has them.
func (im *importer) identity(identity, digests *object) error {
	rc := im.rc
	for _, q := range digests.o.Keys {
		d, err := digests.str(q)
		if err != nil {
			return err
		}
		rc.Identity.PromptDigests[q] = d
	}
	if v, ok, err := identity.optStr("identity_digest"); err != nil {
		return err
	} else if ok {
		rc.Identity.Upstream["identity_digest"] = v
	}
	if v, ok, err := identity.optStr("run_id"); err != nil {
		return err
	} else if ok {
		rc.RunID = v
	}
	if issue, ok := im.top.o.Get("issue"); ok {
		rc.Identity.Upstream["issue"] = scalarString(issue)
	}
	return nil
}

// pickLayout finds the set whose questions are the prompt digests' keys.
func (im *importer) pickLayout(digests *object) error {
	keys := slices.Sorted(slices.Values(digests.o.Keys))
	for _, l := range layouts() {
		if slices.Equal(keys, slices.Sorted(slices.Values(l.questions()))) {
			if _, ok := im.top.o.Get(l.list); !ok {
				return fail(im.file, "", "missing field %q (a %s receipt by its questions)", l.list, l.set)
			}
			im.lay = l
			return nil
		}
	}
	return fail(im.file, "identity.prompt_digests", "questions %v match no typevet set (faces, checks, signatures)", digests.o.Keys)
}

func (im *importer) pins(wall float64) error {
	p, err := im.top.obj("pins")
	if err != nil {
		return err
	}
	rc := im.rc
	if rc.Pins.Fixture.Dataset, err = p.str("dataset"); err != nil {
		return err
	}
	rc.Pins.Fixture.Source = im.lay.source
	seed, err := p.integer(im.lay.seed)
	if err != nil {
		return err
	}
	rc.Pins.Fixture.Seed = int64(seed)
	if im.lay.slice != "" {
		if rc.Pins.Fixture.SliceSHA256, err = p.str(im.lay.slice); err != nil {
			return err
		}
	}
	if rev, ok, err := p.optStr("model_revision"); err != nil {
		return err
	} else if ok {
		rc.Pins.ModelRevision = rev
	}
	if fin, ok, err := p.optStr("finished_utc"); err != nil {
		return err
	} else if ok {
		t, perr := time.Parse(time.RFC3339Nano, fin)
		if perr != nil {
			return fail(im.file, p.at("finished_utc"), "not an ISO 8601 time: %q", fin)
		}
		rc.Finished = t.UTC()
		rc.Started = rc.Finished.Add(-time.Duration(wall * float64(time.Second)))
	}
	if c, ok, err := p.optInt("concurrency"); err != nil {
		return err
	} else if ok {
		rc.Pins.Concurrency = c
	}
	server, err := p.obj("server")
	if err != nil {
		return err
	}
	if rc.Pins.ServerBuild, err = server.str("build_info"); err != nil {
		return err
	}
	if rc.Pins.Served, err = servedModels(server); err != nil {
		return err
	}
	return im.fixtureExtras(p)
}

// servedModels are the server's /v1/models entries, as typevet pinned them.
func servedModels(server *object) ([]receipts.ServedModel, error) {
	served, err := server.list("served")
	if err != nil {
		return nil, err
	}
	var out []receipts.ServedModel
	for i := range served.items {
		s, err := served.obj(i)
		if err != nil {
			return nil, err
		}
		var m receipts.ServedModel
		if m.ID, err = s.str("id"); err != nil {
			return nil, err
		}
		if m.Root, err = s.str("root"); err != nil {
			return nil, err
		}
		if m.MaxModelLen, err = s.integer("max_model_len"); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// fixtureExtras keeps the remaining scalar pins verbatim as fixture
// extras: they name the slice (archive digests, slice sizes, generator
// settings), so two receipts of different slices differ in identity.
func (im *importer) fixtureExtras(p *object) error {
	rc := im.rc
	skip := map[string]bool{"dataset": true, "finished_utc": true, "concurrency": true, "model_revision": true, "server": true, im.lay.seed: true, im.lay.slice: true}
	for _, k := range p.o.Keys {
		if skip[k] {
			continue
		}
		v := p.o.Values[k]
		switch v.(type) {
		case string, json.Number, bool:
		default:
			return fail(im.file, p.at(k), "want a scalar pin, got %s", jsontree.KindOf(v))
		}
		if rc.Pins.Fixture.Extra == nil {
			rc.Pins.Fixture.Extra = map[string]string{}
		}
		rc.Pins.Fixture.Extra[k] = scalarString(v)
	}
	return nil
}

func (im *importer) items() error {
	l := im.lay
	list, err := im.top.list(l.list)
	if err != nil {
		return err
	}
	rc := im.rc
	rc.Pins.Fixture.Items = len(list.items)
	if l.renderID != "" {
		rc.Identity.FixtureDigests = map[string]string{}
	}
	for i := range list.items {
		it, err := list.obj(i)
		if err != nil {
			return err
		}
		item, err := im.item(it)
		if err != nil {
			return err
		}
		if l.renderID != "" {
			// fixtures.ItemDigest is sha256 over the images' raw sha256s;
			// for one image that is sha256 of the render digest's bytes.
			hexsum, err := it.str(l.renderID)
			if err != nil {
				return err
			}
			raw, derr := hex.DecodeString(hexsum)
			if derr != nil || len(raw) != sha256.Size {
				return fail(im.file, it.at(l.renderID), "%q is not a hex sha256", hexsum)
			}
			sum := sha256.Sum256(raw)
			rc.Identity.FixtureDigests[item.ID] = hex.EncodeToString(sum[:])
		}
		rc.Items = append(rc.Items, item)
	}
	return nil
}

func (im *importer) item(it *object) (receipts.Item, error) {
	l := im.lay
	var item receipts.Item
	var err error
	if item.ID, err = it.str(l.id); err != nil {
		return item, err
	}
	if l.group != "" {
		if item.Group, err = it.str(l.group); err != nil {
			return item, err
		}
	}
	gold, group, err := l.gold(it)
	if err != nil {
		return item, err
	}
	item.Gold = gold
	if group != "" {
		item.Group = group
	}
	for _, n := range l.nouls {
		a, err := noulAnswer(it, n)
		if err != nil {
			return item, err
		}
		item.Answers = append(item.Answers, a)
	}
	a, err := choiceAnswer(it, l.verdict)
	if err != nil {
		return item, err
	}
	item.Answers = append(item.Answers, a)
	if a, err = scoreAnswer(it, l.score); err != nil {
		return item, err
	}
	item.Answers = append(item.Answers, a)
	if item.LatencySeconds, err = it.num("latency_seconds"); err != nil {
		return item, err
	}
	if item.InputTokens, err = it.integer("input_tokens"); err != nil {
		return item, err
	}
	return item, nil
}

func noulAnswer(it *object, n noulField) (judgments.Answer, error) {
	p, err := it.num(n.field)
	if err != nil {
		return judgments.Answer{}, err
	}
	if p < 0 || p > 1 {
		return judgments.Answer{}, fail(it.file, it.at(n.field), "%v is not a probability", p)
	}
	label := "false"
	if p > 1-p { // the earlier label (false) wins an exact tie, as in Decide
		label = "true"
	}
	return judgments.Answer{
		Question:      n.question,
		Kind:          judgments.Noul,
		Label:         label,
		Value:         p,
		Confidence:    max(p, 1-p),
		Labels:        []string{"false", "true"},
		Probabilities: map[string]float64{"false": 1 - p, "true": p},
	}, nil
}

func choiceAnswer(it *object, question string) (judgments.Answer, error) {
	verdict, err := it.str("verdict")
	if err != nil {
		return judgments.Answer{}, err
	}
	probs, err := it.obj("verdict_probabilities")
	if err != nil {
		return judgments.Answer{}, err
	}
	a := judgments.Answer{Question: question, Kind: judgments.Choice, Label: verdict, Probabilities: map[string]float64{}}
	for _, k := range probs.o.Keys {
		v, err := probs.num(k)
		if err != nil {
			return a, err
		}
		a.Labels = append(a.Labels, k)
		a.Probabilities[k] = v
		a.Confidence = max(a.Confidence, v)
	}
	p, ok := a.Probabilities[verdict]
	if !ok {
		return a, fail(it.file, it.at("verdict"), "%q is not a key of verdict_probabilities", verdict)
	}
	a.Value = p
	return a, nil
}

func scoreAnswer(it *object, s scoreField) (judgments.Answer, error) {
	score, err := it.num(s.prefix + "_score")
	if err != nil {
		return judgments.Answer{}, err
	}
	level, err := it.integer(s.prefix + "_level")
	if err != nil {
		return judgments.Answer{}, err
	}
	if level < 0 || level >= s.levels {
		return judgments.Answer{}, fail(it.file, it.at(s.prefix+"_level"), "%d is not a level 0..%d", level, s.levels-1)
	}
	a := judgments.Answer{Question: s.question, Kind: judgments.Score, Label: strconv.Itoa(level), Value: score}
	for i := range s.levels {
		a.Labels = append(a.Labels, strconv.Itoa(i))
	}
	probs, ok, err := it.optObj(s.prefix + "_probabilities")
	if err != nil || !ok {
		// Value-only: the level distribution was not recorded.
		return a, err
	}
	a.Probabilities = map[string]float64{}
	for _, l := range a.Labels {
		v, err := probs.num(l)
		if err != nil {
			return a, err
		}
		a.Probabilities[l] = v
		a.Confidence = max(a.Confidence, v)
	}
	if len(probs.o.Keys) != s.levels {
		return a, fail(it.file, it.at(s.prefix+"_probabilities"), "%d levels, want %d", len(probs.o.Keys), s.levels)
	}
	return a, nil
}

func (im *importer) stopped() error {
	v, ok := im.top.o.Get("stopped")
	if !ok {
		return fail(im.file, "", "missing field %q", "stopped")
	}
	if v == nil {
		return nil
	}
	s, err := im.top.obj("stopped")
	if err != nil {
		return err
	}
	st := &receipts.Stopped{Reason: "error"}
	if st.Index, err = s.integer("index"); err != nil {
		return err
	}
	if st.Item, err = s.str(im.lay.id); err != nil {
		return err
	}
	if st.ErrorClass, err = s.str("error_class"); err != nil {
		return err
	}
	if st.Message, err = s.str("message"); err != nil {
		return err
	}
	if st.Discarded, err = s.integer("discarded"); err != nil {
		return err
	}
	im.rc.Stopped = st
	return nil
}

func (im *importer) throughput(wall float64) error {
	rc := im.rc
	t := &rc.Throughput
	n := len(rc.Items)
	for _, it := range rc.Items {
		t.PromptTokens += it.InputTokens
	}
	t.Requests = n * len(im.lay.questions())
	tb, ok, err := im.top.optObj("throughput")
	if err != nil {
		return err
	}
	if !ok {
		return im.derivedThroughput(wall)
	}
	if t.Concurrency, err = tb.integer("concurrency"); err != nil {
		return err
	}
	if rc.Pins.Concurrency == 0 {
		rc.Pins.Concurrency = t.Concurrency
	} else if rc.Pins.Concurrency != t.Concurrency {
		return fail(im.file, tb.at("concurrency"), "%d, but pins.concurrency is %d", t.Concurrency, rc.Pins.Concurrency)
	}
	if t.WallSeconds, err = tb.num("wall_seconds"); err != nil {
		return err
	}
	if t.Judgments, err = tb.integer("judgments"); err != nil {
		return err
	}
	if t.Images, err = tb.integer("images"); err != nil {
		return err
	}
	if t.JudgmentsPerSecond, _, err = tb.optNum("judgments_per_second"); err != nil {
		return err
	}
	if t.ImagesPerSecond, _, err = tb.optNum("images_per_second"); err != nil {
		return err
	}
	if t.Discarded, err = tb.integer("discarded"); err != nil {
		return err
	}
	if err := im.latency(tb, &t.Latency); err != nil {
		return err
	}
	sv, ok, err := tb.optObj("server")
	if err != nil || !ok {
		return err
	}
	rc.Server, err = server(sv)
	return err
}

// derivedThroughput stands in for the throughput block typevet 0.4.0
// receipts lack (they predate the concurrency pool: one judgment at a
// time): the figures are derived from wall_seconds and the items'
// latencies, with a warning that says so.
func (im *importer) derivedThroughput(wall float64) error {
	rc := im.rc
	if rc.Pins.Concurrency == 0 {
		rc.Pins.Concurrency = 1
	}
	rc.Warnings = append(rc.Warnings, "typevet receipt has no throughput block: concurrency taken as 1 (typevet 0.4.0 ran one judgment at a time); rates and percentiles derived from wall_seconds and item latencies")
	tl := tally.Tally{Concurrency: rc.Pins.Concurrency, WallSeconds: wall}
	for _, it := range rc.Items {
		tl.Add(tally.Judgment{LatencySeconds: it.LatencySeconds, Images: im.lay.images,
			Requests: len(im.lay.questions()), PromptTokens: it.InputTokens})
	}
	rc.Throughput = tl.Close()
	if m, ok, err := im.meanLatency(); err != nil {
		return err
	} else if ok {
		rc.Throughput.Latency.Mean = m
	}
	return nil
}

// latency reads the throughput block's latency_seconds; its mean is
// typevet's unrounded one where recorded, else the items'.
func (im *importer) latency(tb *object, l *receipts.Latency) error {
	lat, err := tb.obj("latency_seconds")
	if err != nil {
		return err
	}
	if l.N, err = lat.integer("n"); err != nil {
		return err
	}
	for _, q := range []struct {
		key string
		dst *float64
	}{{"p50", &l.P50}, {"p95", &l.P95}, {"p99", &l.P99}} {
		if *q.dst, _, err = lat.optNum(q.key); err != nil {
			return err
		}
	}
	if m, ok, err := im.meanLatency(); err != nil {
		return err
	} else if ok {
		l.Mean = m
	} else {
		l.Mean = tally.LatencyOf(latencies(im.rc.Items)).Mean
	}
	return nil
}

// meanLatency is typevet's unrounded mean from its metrics block.
func (im *importer) meanLatency() (float64, bool, error) {
	m, ok, err := im.top.optObj("metrics")
	if err != nil || !ok {
		return 0, false, err
	}
	return m.optNum("mean_latency_seconds")
}

// latencies are the items' client latencies in seconds.
func latencies(items []receipts.Item) []float64 {
	xs := make([]float64, len(items))
	for i, it := range items {
		xs[i] = it.LatencySeconds
	}
	return xs
}

// server maps typevet's server block: its histograms (as bucket upper
// bounds), the prefix cache hit rate, counters (with the mm cache hit
// rate computed from them) and gauges.
func server(sv *object) (*receipts.Server, error) {
	s := &receipts.Server{Status: "ok"}
	for _, name := range []string{"e2e", "queue", "prefill"} {
		v, ok := sv.o.Get(name)
		if !ok {
			continue
		}
		if s.Histograms == nil {
			s.Histograms = map[string]receipts.Histogram{}
		}
		if str, isStr := v.(string); isStr {
			s.Histograms[name] = receipts.Histogram{Status: str}
			continue
		}
		h, err := sv.obj(name)
		if err != nil {
			return nil, err
		}
		if s.Histograms[name], err = histogram(h); err != nil {
			return nil, err
		}
	}
	if v, ok, err := sv.optNum("prefix_cache_hit_rate"); err != nil {
		if raw, _ := sv.o.Get("prefix_cache_hit_rate"); !isUnknown(raw) {
			return nil, err
		}
	} else if ok {
		s.PrefixCacheHitRate = &v
	}
	if err := counters(sv, s); err != nil {
		return nil, err
	}
	if err := gauges(sv, s); err != nil {
		return nil, err
	}
	return s, nil
}

// histogram is one of typevet's histogram summaries: count, sum and the
// quantiles it read as bucket upper bounds.
func histogram(h *object) (receipts.Histogram, error) {
	out := receipts.Histogram{Status: "ok"}
	var err error
	if out.Count, err = h.num("count"); err != nil {
		return receipts.Histogram{}, err
	}
	if out.Sum, err = h.num("sum"); err != nil {
		return receipts.Histogram{}, err
	}
	q := &receipts.Quantiles{}
	for _, p := range []struct {
		key string
		dst **float64
	}{{"p50", &q.P50}, {"p95", &q.P95}, {"p99", &q.P99}} {
		// A rank beyond the last finite bucket edge is "+Inf": no
		// estimate, left nil.
		if x, ok, err := h.optNum(p.key); err != nil {
			if raw, _ := h.o.Get(p.key); raw != "+Inf" {
				return receipts.Histogram{}, err
			}
		} else if ok {
			*p.dst = &x
		}
	}
	out.UpperBound = q
	return out, nil
}

// counters reads the counter deltas (one not recorded is a problem, not
// an error) and computes the mm cache hit rate from them.
func counters(sv *object, s *receipts.Server) error {
	c, ok, err := sv.optObj("counters")
	if err != nil || !ok {
		return err
	}
	s.Counters = map[string]float64{}
	for _, k := range c.o.Keys {
		v, ok, err := c.optNum(k)
		if err != nil {
			return err
		}
		if !ok {
			s.Problems = append(s.Problems, fmt.Sprintf("counter %s: not recorded", k))
			continue
		}
		s.Counters[k] = v
	}
	// The mm cache hit rate is the ratio of two recorded counters,
	// as vetbench's scrape computes it.
	if s.MMCacheHitRate, err = tally.HitRatio(s.Counters, tally.MMCacheHits, tally.MMCacheQueries); err != nil {
		s.Problems = append(s.Problems, "mm cache: "+err.Error())
	}
	return nil
}

// gauges reads the gauges' before and after readings; either may be
// missing.
func gauges(sv *object, s *receipts.Server) error {
	g, ok, err := sv.optObj("gauges")
	if err != nil || !ok {
		return err
	}
	s.Gauges = map[string]receipts.GaugePair{}
	for _, k := range g.o.Keys {
		pair, err := g.obj(k)
		if err != nil {
			return err
		}
		var gp receipts.GaugePair
		if v, ok, err := pair.optNum("before"); err != nil {
			return err
		} else if ok {
			gp.Before = &v
		}
		if v, ok, err := pair.optNum("after"); err != nil {
			return err
		} else if ok {
			gp.After = &v
		}
		s.Gauges[k] = gp
	}
	return nil
}

func isUnknown(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "unknown")
}

func (im *importer) quality() error {
	m, ok, err := im.top.optObj("metrics")
	if err != nil || !ok {
		return err
	}
	q := &receipts.Quality{Items: len(im.rc.Items)}
	if q.Accuracy, _, err = m.optNum("accuracy"); err != nil {
		return err
	}
	if q.CannotTellRate, _, err = m.optNum("cannot_tell_rate"); err != nil {
		return err
	}
	if byVariant, ok, err := m.optObj("accuracy_by_variant"); err != nil {
		return err
	} else if ok {
		q.AccuracyByGroup = map[string]float64{}
		for _, k := range byVariant.o.Keys {
			if q.AccuracyByGroup[k], err = byVariant.num(k); err != nil {
				return err
			}
		}
	}
	if agr, ok, err := m.optObj("noul_choice_agreement"); err != nil {
		return err
	} else if ok {
		if r, ok, err := agr.optNum("rate"); err != nil {
			return err
		} else if ok {
			q.NoulChoiceAgreement = &r
		}
		// checks count "counted", signatures "decided".
		for _, k := range []string{"counted", "decided"} {
			if c, ok, err := agr.optInt(k); err != nil {
				return err
			} else if ok {
				q.AgreementCounted = c
			}
		}
	}
	im.rc.Quality = q
	return nil
}

func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	}
	var b bytes.Buffer
	fmt.Fprint(&b, v)
	return b.String()
}
