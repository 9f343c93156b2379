package typevet

// layout says where one typevet set keeps its answers. The field names
// are those of typevet's receipts (evals/fixtures/*/receipts/*.json); the
// question ids are the keys of the receipt's identity.prompt_digests, in
// the order typevet asks them.
type layout struct {
	set      string // vetbench set name
	list     string // "pairs" or "cases"
	id       string // item id field
	images   int    // images per judgment
	source   string // fixtures.SourceReal or SourceSynthetic
	seed     string // pins field holding the slice or generator seed
	slice    string // pins field holding typevet's slice_sha256, if any
	group    string // item field naming the group, if any
	nouls    []noulField
	verdict  string // Choice question id; fields verdict, verdict_probabilities
	score    scoreField
	gold     func(it *object) (map[string][]string, string, error)
	renderID string // item field holding the image sha256 (checks)
}

type noulField struct {
	question string
	field    string // P(true)
}

type scoreField struct {
	question string
	prefix   string // <prefix>_score, <prefix>_level, <prefix>_probabilities
	levels   int
}

func layouts() []layout {
	return []layout{
		{
			set: "faces", list: "pairs", id: "pair_id", images: 2, source: "real",
			seed:    "slice_seed",
			nouls:   []noulField{{"same_person", "same_person_confidence"}},
			verdict: "verdict",
			score:   scoreField{"face_visibility", "visibility", 5},
			gold: func(it *object) (map[string][]string, string, error) {
				same, err := it.boolean("gold_same_person")
				if err != nil {
					return nil, "", err
				}
				// typevet scores the verdict right only on the matching
				// side; cannot_tell is always wrong.
				if same {
					return map[string][]string{"same_person": {"true"}, "verdict": {"same_person"}}, "same_person", nil
				}
				return map[string][]string{"same_person": {"false"}, "verdict": {"different_person"}}, "different_person", nil
			},
		},
		{
			set: "checks", list: "cases", id: "case_id", images: 1, source: "synthetic",
			seed: "generator_seed", slice: "slice_sha256", group: "variant",
			nouls:    []noulField{{"payee_matches", "payee_confidence"}, {"amounts_match", "amounts_confidence"}},
			verdict:  "verdict",
			score:    scoreField{"legibility", "legibility", 5},
			renderID: "render_sha256",
			gold: func(it *object) (map[string][]string, string, error) {
				payee, err := it.boolean("payee_truth")
				if err != nil {
					return nil, "", err
				}
				amounts, err := it.boolean("amounts_truth")
				if err != nil {
					return nil, "", err
				}
				expected, err := it.strings("expected_verdicts")
				if err != nil {
					return nil, "", err
				}
				return map[string][]string{
					"payee_matches": {boolLabel(payee)},
					"amounts_match": {boolLabel(amounts)},
					"verdict":       expected,
				}, "", nil
			},
		},
		{
			set: "signatures", list: "pairs", id: "pair_id", images: 2, source: "real",
			seed: "slice_seed", group: "kind",
			nouls:   []noulField{{"same_writer", "same_writer_confidence"}},
			verdict: "verdict",
			score:   scoreField{"image_quality", "quality", 5},
			gold: func(it *object) (map[string][]string, string, error) {
				same, err := it.boolean("gold_same_writer")
				if err != nil {
					return nil, "", err
				}
				// typevet's accuracy counts both "different" verdicts as
				// right for a pair of two writers.
				if same {
					return map[string][]string{"same_writer": {"true"}, "verdict": {"same_writer"}}, "", nil
				}
				return map[string][]string{"same_writer": {"false"}, "verdict": {"different_writer", "skilled_forgery_suspected"}}, "", nil
			},
		},
	}
}

// questions lists the layout's question ids in asking order.
func (l layout) questions() []string {
	var qs []string
	for _, n := range l.nouls {
		qs = append(qs, n.question)
	}
	return append(qs, l.verdict, l.score.question)
}

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
