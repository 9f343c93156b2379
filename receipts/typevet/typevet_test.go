package typevet_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// raw is an independent, minimal reading of a typevet receipt with
// encoding/json, to check the importer against.
type raw struct {
	Model string `json:"model"`
	Pins  struct {
		Concurrency   *int   `json:"concurrency"`
		ModelRevision string `json:"model_revision"`
		SliceSHA256   string `json:"slice_sha256"`
		Server        struct {
			BuildInfo string `json:"build_info"`
		} `json:"server"`
	} `json:"pins"`
	Identity struct {
		PromptDigests map[string]string `json:"prompt_digests"`
	} `json:"identity"`
	WallSeconds float64 `json:"wall_seconds"`
	Throughput  *struct {
		Concurrency int `json:"concurrency"`
		Latency     struct {
			P95 float64 `json:"p95"`
		} `json:"latency_seconds"`
		Server struct {
			E2E struct {
				P95 float64 `json:"p95"`
			} `json:"e2e"`
			Counters map[string]float64 `json:"counters"`
		} `json:"server"`
	} `json:"throughput"`
	Pairs []map[string]any `json:"pairs"`
	Cases []map[string]any `json:"cases"`
}

func readRaw(t *testing.T, name string) raw {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var r raw
	require.NoError(t, json.Unmarshal(data, &r))
	return r
}

func TestImportEveryReceipt(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, 12, "all of /work/shared/typevet-receipts is copied")
	for _, f := range files {
		name := filepath.Base(f)
		r, err := typevet.ReadFile(f)
		require.NoError(t, err, name)
		want := readRaw(t, name)
		items := append(want.Pairs, want.Cases...)
		require.Len(t, r.Items, len(items), name)
		require.Equal(t, receipts.SourceTypevet, r.Source)
		require.Equal(t, want.Model, r.Pins.Model)
		require.Equal(t, want.Pins.ModelRevision, r.Pins.ModelRevision)
		require.Equal(t, want.Pins.Server.BuildInfo, r.Pins.ServerBuild)
		require.Equal(t, want.Identity.PromptDigests, r.Identity.PromptDigests)
		wantSet := map[string]string{"face": "faces", "chec": "checks", "sign": "signatures"}[name[:4]]
		require.Equal(t, wantSet, r.Set, name)
		wantC := 1
		if want.Pins.Concurrency != nil {
			wantC = *want.Pins.Concurrency
		}
		require.Equal(t, wantC, r.Pins.Concurrency, name)
		require.Equal(t, receipts.DispatchTypevet, r.Pins.QuestionDispatch, "typevet's client: a baseline for -dispatch typevet")
		// Every item, every answer: the Noul is the file's confidence,
		// the verdict the file's verdict, the level the file's level.
		for i, it := range items {
			got := r.Items[i]
			for _, a := range got.Answers {
				switch a.Kind {
				case judgments.Noul:
					field := map[string]string{"same_person": "same_person_confidence", "same_writer": "same_writer_confidence",
						"payee_matches": "payee_confidence", "amounts_match": "amounts_confidence"}[a.Question]
					require.Equal(t, it[field].(float64), a.Value, "%s %s", name, got.ID)
					require.Equal(t, it[field].(float64) > 0.5, a.Label == "true")
				case judgments.Choice:
					require.Equal(t, it["verdict"], a.Label)
					require.Equal(t, len(it["verdict_probabilities"].(map[string]any)), len(a.Labels))
				case judgments.Score:
					require.True(t, receipts.ValueOnly(a), "these copies omit the level distribution")
					prefix := map[string]string{"face_visibility": "visibility", "image_quality": "quality", "legibility": "legibility"}[a.Question]
					require.Equal(t, strconv.Itoa(int(it[prefix+"_level"].(float64))), a.Label)
					require.Equal(t, it[prefix+"_score"].(float64), a.Value)
				}
			}
			require.Equal(t, it["latency_seconds"].(float64), got.LatencySeconds)
			require.Equal(t, int(it["input_tokens"].(float64)), got.InputTokens)
		}
	}
}

func TestChoiceLabelsKeepFileOrder(t *testing.T) {
	t.Parallel()
	for name, want := range map[string][]string{
		"face_match_vllm_receipt.json":  {"same_person", "different_person", "cannot_tell"},
		"check_match_vllm_receipt.json": {"consistent", "payee_mismatch", "amount_mismatch", "date_mismatch", "unsigned", "cannot_tell"},
		"signature_match_vllm.json":     {"same_writer", "different_writer", "skilled_forgery_suspected", "cannot_tell"},
	} {
		r, err := typevet.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		a, ok := r.Items[0].Answer("verdict")
		require.True(t, ok)
		require.Equal(t, want, a.Labels, name)
		qs := make([]string, 0)
		for _, a := range r.Items[0].Answers {
			qs = append(qs, a.Question)
		}
		require.Len(t, qs, len(r.Identity.PromptDigests))
	}
}

// typevet's prompt digests are judgments.Question.Digest(): build the face
// questions from typevet's wording and check byte compatibility, which is
// what makes identity comparable across the two formats.
func TestPromptDigestsMatchJudgments(t *testing.T) {
	t.Parallel()
	same := judgments.NewNoul("same_person", "Do image 1 and image 2 show the same person?",
		"The main faces are the same person.", "The main faces are two different people.")
	verdict := judgments.NewChoice("verdict", "Compare the main face in image 1 with the main face in image 2. Choose one:",
		judgments.Option{Label: "same_person", Description: "The main faces are the same person."},
		judgments.Option{Label: "different_person", Description: "The main faces are two different people."},
		judgments.Option{Label: "cannot_tell", Description: "The images do not show enough of a face to decide."})
	vis := judgments.NewScore("face_visibility", "Rate how clearly image 2 shows the main face:",
		"No face is visible.", "A face is present but most of it is hidden or blurred.", "Part of the face is visible.",
		"Most of the face is visible.", "All of the face is clearly visible.")
	r, err := typevet.ReadFile("testdata/face_match_vllm_throughput_full_c16.json")
	require.NoError(t, err)
	spec := judgments.Spec{Questions: []judgments.Question{same, verdict, vis}}
	require.Equal(t, r.Identity.PromptDigests, spec.PromptDigests())
}

func TestThroughputAndServerMapped(t *testing.T) {
	t.Parallel()
	name := "check_match_vllm_throughput_full_c16.json"
	want := readRaw(t, name)
	r, err := typevet.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	require.Equal(t, want.Throughput.Concurrency, r.Throughput.Concurrency)
	require.Equal(t, want.Throughput.Latency.P95, r.Throughput.Latency.P95)
	require.NotNil(t, r.Server)
	require.Equal(t, want.Throughput.Server.Counters, r.Server.Counters)
	require.Equal(t, want.Throughput.Server.E2E.P95, *r.Server.Histograms["e2e"].UpperBound.P95)
	require.InDelta(t, want.Throughput.Server.Counters["mm_cache_hits"]/want.Throughput.Server.Counters["mm_cache_queries"], *r.Server.MMCacheHitRate, 1e-15)
	require.Equal(t, "vllm", r.Identity.Upstream["backend"])
	require.Equal(t, "316", r.Identity.Upstream["issue"])
	require.Equal(t, want.Pins.SliceSHA256, r.Pins.Fixture.SliceSHA256)
	// Per-item fixture digests are fixtures.ItemDigest of the one render:
	// sha256 over the raw bytes of the render's sha256.
	sum, err := hex.DecodeString(want.Cases[5]["render_sha256"].(string))
	require.NoError(t, err)
	d := sha256.Sum256(sum)
	require.Equal(t, hex.EncodeToString(d[:]), r.Identity.FixtureDigests[want.Cases[5]["case_id"].(string)])
}

func TestSingleStreamReceiptDerivesThroughput(t *testing.T) {
	t.Parallel()
	name := "face_match_vllm_receipt.json"
	want := readRaw(t, name)
	r, err := typevet.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	require.Nil(t, want.Throughput)
	require.Equal(t, 1, r.Pins.Concurrency)
	require.NotEmpty(t, r.Warnings)
	require.Equal(t, want.WallSeconds, r.Throughput.WallSeconds)
	require.Equal(t, 200, r.Throughput.Judgments)
	require.Equal(t, 400, r.Throughput.Images)
	// Nearest rank, typevet's method: index ceil(0.95·n) − 1.
	var lat []float64
	for _, p := range want.Pairs {
		lat = append(lat, p["latency_seconds"].(float64))
	}
	sort.Float64s(lat)
	require.Equal(t, lat[int(math.Ceil(0.95*float64(len(lat))))-1], r.Throughput.Latency.P95)
	require.Nil(t, r.Server)
}

func TestIdentityAcrossTypevetReceipts(t *testing.T) {
	t.Parallel()
	read := func(name string) *receipts.Receipt {
		r, err := typevet.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		return r
	}
	// Same weights, build, prompts and slice: comparable.
	require.Empty(t, receipts.IdentityDiff(read("check_match_vllm_receipt.json"), read("check_match_vllm_throughput_full_c16.json")))
	require.Empty(t, receipts.IdentityDiff(read("signature_match_vllm.json"), read("signature_match_vllm_throughput_full_c32.json")))
	// The 0.4.0 face run asked a served alias and recorded no revision.
	faces0, faces16 := read("face_match_vllm_receipt.json"), read("face_match_vllm_throughput_full_c16.json")
	require.Equal(t, "gemma-4-31b-it", faces0.Pins.Model)
	require.Empty(t, receipts.IdentityDiff(faces0, faces16))
	require.Equal(t, []string{"model_revision: recorded by the candidate only (842da3794eaa0b77d5f08bae87a17459d91ff475)"}, receipts.IdentityUnverified(faces0, faces16))
	// typevet's face receipts hold no slice digest and no per-image digest.
	require.Equal(t, []string{"control_token_ids", "fixture.slice_sha256", "fixture_digests", "server_flags", "cache_config", "harness_version"},
		receipts.IdentityUnrecorded(faces0, faces16))
	// The sweep subset is another slice.
	diff := receipts.IdentityDiff(read("signature_match_vllm_throughput_c1.json"), read("signature_match_vllm_throughput_full_c16.json"))
	require.Contains(t, strings.Join(diff, "\n"), "fixture.extra.slice_per_kind: 20 → 60")
}

func TestImportErrorsNameFileAndField(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/face_match_vllm_receipt.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		want   string
	}{
		{"missing noul", func(m map[string]any) {
			delete(m["pairs"].([]any)[12].(map[string]any), "same_person_confidence")
		}, `typevet: face_match_vllm_receipt.json: pairs[12]: missing field "same_person_confidence"`},
		{"wrong type", func(m map[string]any) {
			m["pairs"].([]any)[3].(map[string]any)["visibility_level"] = "4"
		}, `typevet: face_match_vllm_receipt.json: pairs[3].visibility_level: want an integer, got a string`},
		{"verdict not a key", func(m map[string]any) {
			m["pairs"].([]any)[0].(map[string]any)["verdict"] = "maybe"
		}, `pairs[0].verdict: "maybe" is not a key of verdict_probabilities`},
		{"missing pins server", func(m map[string]any) {
			delete(m["pins"].(map[string]any), "server")
		}, `typevet: face_match_vllm_receipt.json: pins: missing field "server"`},
		{"unknown questions", func(m map[string]any) {
			m["identity"].(map[string]any)["prompt_digests"] = map[string]any{"x": strings.Repeat("a", 64)}
		}, `identity.prompt_digests: questions [x] match no typevet set`},
		{"llama.cpp", func(m map[string]any) { m["backend"] = "llama_cpp" }, `backend: "llama_cpp" is not supported`},
		{"verdict not argmax", func(m map[string]any) {
			m["pairs"].([]any)[0].(map[string]any)["verdict"] = "cannot_tell"
		}, `items[0].answers[1].label: "cannot_tell"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mm map[string]any
			require.NoError(t, json.Unmarshal(data, &mm))
			c.mutate(mm)
			b, err := json.Marshal(mm)
			require.NoError(t, err)
			_, err = typevet.Import(bytes.NewReader(b), "face_match_vllm_receipt.json")
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			var se *receipts.SchemaError
			require.True(t, errors.As(err, &se), "a *receipts.SchemaError: %v", err)
		})
	}
	_, err = typevet.Import(bytes.NewReader(data[:5000]), "cut.json")
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "cut.json", se.File)
	require.True(t, strings.HasPrefix(se.Path, "pairs["), se.Path)
	require.Positive(t, se.Line)
}

func TestReadAnySniffs(t *testing.T) {
	t.Parallel()
	tv, err := typevet.ReadAny("testdata/check_match_vllm_receipt.json")
	require.NoError(t, err)
	require.Equal(t, receipts.SourceTypevet, tv.Source)

	path := filepath.Join(t.TempDir(), "v.json")
	require.NoError(t, receipts.WriteFile(path, tv))
	vb, err := typevet.ReadAny(path)
	require.NoError(t, err)
	require.Equal(t, tv, vb, "an imported receipt round-trips through vetbench's format")

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"hello": 1}`), 0o644))
	_, err = typevet.ReadAny(bad)
	require.ErrorContains(t, err, "neither a vetbench receipt")

	rs, err := typevet.ReadDir("testdata")
	require.NoError(t, err)
	require.Len(t, rs, 12)
	sets := map[string]int{}
	for _, r := range rs {
		sets[r.Set]++
	}
	require.Equal(t, map[string]int{"faces": 3, "checks": 3, "signatures": 6}, sets)
}

// P(true) exactly one half is a tie: the earlier label, false, wins, as
// judgments.Decide decides it.
func TestNoulTieGoesToFalse(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/face_match_vllm_receipt.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	m["pairs"].([]any)[0].(map[string]any)["same_person_confidence"] = 0.5
	b, err := json.Marshal(m)
	require.NoError(t, err)
	r, err := typevet.Import(bytes.NewReader(b), "tie.json")
	require.NoError(t, err)
	a, _ := r.Items[0].Answer("same_person")
	want, err := judgments.Decide(judgments.NewNoul("same_person", "", "", ""), []float64{math.Log(0.5), math.Log(0.5)})
	require.NoError(t, err)
	require.Equal(t, want.Label, a.Label)
	require.Equal(t, "false", a.Label)
}
