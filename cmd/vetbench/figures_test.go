package main

import (
	"encoding/json"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A second, deliberately small reading of typevet receipts, sharing no
// code with receipts/typevet or receipts.Compare: the figures vetbench
// compare prints are checked against it.
type tvItem map[string]any

func tvItems(t *testing.T, name string) (ids []string, items map[string]tvItem) {
	t.Helper()
	data, err := os.ReadFile(tv(name))
	require.NoError(t, err)
	var doc struct {
		Pairs []tvItem `json:"pairs"`
		Cases []tvItem `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	items = map[string]tvItem{}
	for _, it := range append(doc.Pairs, doc.Cases...) {
		id, _ := it["pair_id"].(string)
		if id == "" {
			id = it["case_id"].(string)
		}
		ids = append(ids, id)
		items[id] = it
	}
	return ids, items
}

type expected struct {
	compared, equal, nearTie, confident, noulBeyond int
	maxNoul                                         float64
	maxNoulByQ                                      map[string]float64
}

// expect computes the comparison by hand: Nouls by their confidence field
// (true side when > 0.5), the verdict field, the level field; margins from
// the baseline's own numbers; a level move has no margin (value-only) and
// counts as confident.
func expect(t *testing.T, baseName, candName string, nearTie, tol float64) expected {
	ids, base := tvItems(t, baseName)
	_, cand := tvItems(t, candName)
	nouls := map[string]string{"same_person_confidence": "same_person", "same_writer_confidence": "same_writer",
		"payee_confidence": "payee_matches", "amounts_confidence": "amounts_match"}
	var e expected
	e.maxNoulByQ = map[string]float64{}
	classify := func(margin float64) {
		if margin < nearTie {
			e.nearTie++
		} else {
			e.confident++
		}
	}
	for _, id := range ids {
		b, c := base[id], cand[id]
		if c == nil {
			continue
		}
		e.compared++
		for field, q := range nouls {
			pb, ok := b[field].(float64)
			if !ok {
				continue
			}
			pc := c[field].(float64)
			d := math.Abs(pc - pb)
			e.maxNoul = math.Max(e.maxNoul, d)
			e.maxNoulByQ[q] = math.Max(e.maxNoulByQ[q], d)
			if d > tol {
				e.noulBeyond++
			}
			if (pb > 0.5) == (pc > 0.5) {
				e.equal++
			} else {
				classify(math.Abs(2*pb - 1))
			}
		}
		if b["verdict"] == c["verdict"] {
			e.equal++
		} else {
			var ps []float64
			for _, v := range b["verdict_probabilities"].(map[string]any) {
				ps = append(ps, v.(float64))
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(ps)))
			classify(ps[0] - ps[1])
		}
		for k := range b {
			if strings.HasSuffix(k, "_level") {
				if b[k] == c[k] {
					e.equal++
				} else {
					e.confident++
				}
			}
		}
	}
	return e
}

type jsonReport struct {
	ItemsCompared int `json:"items_compared"`
	VerdictsEqual int `json:"verdicts_equal"`
	VerdictsMoved struct {
		NearTie   int `json:"near_tie"`
		Confident int `json:"confident"`
	} `json:"verdicts_moved"`
	NoulBeyond int     `json:"noul_beyond_tolerance"`
	MaxNoul    float64 `json:"max_noul_delta"`
	Questions  []struct {
		Question string   `json:"question"`
		MaxNoul  *float64 `json:"max_noul_delta"`
	} `json:"questions"`
	Moved []struct {
		Item     string `json:"item"`
		Question string `json:"question"`
		Class    string `json:"class"`
	} `json:"moved"`
	Identity struct {
		Equal bool `json:"equal"`
	} `json:"identity"`
	Passed bool `json:"passed"`
}

func TestTypevetFiguresMatchAnIndependentReading(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{
		{"check_match_vllm_receipt.json", "check_match_vllm_throughput_full_c16.json"},
		{"check_match_vllm_throughput_full_c16.json", "check_match_vllm_throughput_full_c32.json"},
		{"face_match_vllm_receipt.json", "face_match_vllm_throughput_full_c16.json"},
		{"face_match_vllm_throughput_full_c16.json", "face_match_vllm_throughput_full_c32.json"},
		{"signature_match_vllm.json", "signature_match_vllm_throughput_full_c16.json"},
		{"signature_match_vllm_throughput_full_c16.json", "signature_match_vllm_throughput_full_c32.json"},
		{"signature_match_vllm_throughput_c1.json", "signature_match_vllm_throughput_c32.json"},
	}
	for _, p := range pairs {
		for _, near := range []string{"0.5", "0.05"} {
			t.Run(p[0]+"_vs_"+p[1]+"_near"+near, func(t *testing.T) {
				t.Parallel()
				stdout, stderr, code := run(t, "compare", "-json", "-near-tie", near, tv(p[0]), tv(p[1]))
				require.NotEqual(t, exitNoVerdict, code, stderr)
				var got jsonReport
				require.NoError(t, json.Unmarshal([]byte(stdout), &got))
				m := 0.5
				if near == "0.05" {
					m = 0.05
				}
				want := expect(t, p[0], p[1], m, 0.001)
				require.True(t, got.Identity.Equal)
				require.Equal(t, want.compared, got.ItemsCompared)
				require.Equal(t, want.equal, got.VerdictsEqual)
				require.Equal(t, want.nearTie, got.VerdictsMoved.NearTie)
				require.Equal(t, want.confident, got.VerdictsMoved.Confident)
				require.Equal(t, want.noulBeyond, got.NoulBeyond)
				require.Equal(t, want.maxNoul, got.MaxNoul)
				for _, q := range got.Questions {
					if w, ok := want.maxNoulByQ[q.Question]; ok {
						require.NotNil(t, q.MaxNoul, q.Question)
						require.Equal(t, w, *q.MaxNoul, q.Question)
					} else {
						require.Nil(t, q.MaxNoul, q.Question)
					}
				}
				pass := want.confident == 0 && want.noulBeyond == 0
				require.Equal(t, pass, got.Passed)
				require.Equal(t, map[bool]int{true: exitPass, false: exitFail}[pass], code)
			})
		}
	}
}

// Items checked by hand in the files (not taken from vetbench's output).
func TestTypevetItemsByHand(t *testing.T) {
	t.Parallel()
	// faces 0.4.0 → c16: Jennifer_Garner's same_person P(true) went
	// 0.2018 → 0.5622 (a flip with baseline margin 0.596: confident);
	// Bill_Frist's verdict same_person 0.6514 / different_person 0.3486
	// flipped (margin 0.303: a near tie at the default 0.5).
	stdout, _, code := run(t, "compare", "-json", tv("face_match_vllm_receipt.json"), tv("face_match_vllm_throughput_full_c16.json"))
	require.Equal(t, exitFail, code)
	var got jsonReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	moved := map[string]string{}
	for _, m := range got.Moved {
		moved[m.Item+" "+m.Question] = m.Class
	}
	require.Equal(t, map[string]string{
		"1:Jennifer_Garner_0005:Jennifer_Garner_0009 same_person": "confident",
		"1:Bill_Frist_0002:Bill_Frist_0009 verdict":               "near_tie",
	}, moved)
	require.InDelta(t, 0.5621765008857981-0.20181323186177208, got.MaxNoul, 1e-15)

	// checks 0.4.0 → c16: no verdict moved; one Noul (amounts_match of
	// r13:low_legibility) moved by 0.0070.
	stdout, _, code = run(t, "compare", "-json", tv("check_match_vllm_receipt.json"), tv("check_match_vllm_throughput_full_c16.json"))
	require.Equal(t, exitFail, code)
	got = jsonReport{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Empty(t, got.Moved)
	require.Equal(t, 1, got.NoulBeyond)
	require.InDelta(t, 0.006999272455459726, got.MaxNoul, 1e-15)

	// signatures c16 → c32 (same launch): three skilled-forgery verdicts
	// flip with baseline margins 0.062, 0.185, 0.055; Nouls identical.
	stdout, _, code = run(t, "compare", "-json", tv("signature_match_vllm_throughput_full_c16.json"), tv("signature_match_vllm_throughput_full_c32.json"))
	require.Equal(t, exitPass, code)
	got = jsonReport{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Len(t, got.Moved, 3)
	require.Zero(t, got.MaxNoul)
}
