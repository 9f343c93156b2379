package replay_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures/checks"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/replay"
	"github.com/vetbench/vetbench/receipts/typevet"
	"github.com/vetbench/vetbench/stub"
)

// typevetChecks is typevet's single-stream checks receipt from its H100 run
// (copied from receipts/typevet/testdata).
const typevetChecks = "testdata/check_match_vllm_receipt.json"

// TestReadFile reads typevet's receipt and the same answers written as a
// vetbench receipt: both formats give the same recording.
func TestReadFile(t *testing.T) {
	rec, err := replay.ReadFile(typevetChecks)
	require.NoError(t, err)
	require.Equal(t, "typevet:checks", rec.Source)
	require.Len(t, rec.Answers, 140)
	for id, as := range rec.Answers {
		require.Len(t, as, 4, id)
	}

	r, err := typevet.ReadFile(typevetChecks)
	require.NoError(t, err)
	r.Source = receipts.SourceVetbench
	path := filepath.Join(t.TempDir(), "receipt.json")
	require.NoError(t, receipts.WriteFile(path, r))
	again, err := replay.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "vetbench:checks", again.Source)
	require.Equal(t, rec.Answers, again.Answers)
}

// TestReadFileErrors shows unreadable and malformed receipts are refused,
// the cause named.
func TestReadFileErrors(t *testing.T) {
	_, err := replay.ReadFile(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorContains(t, err, "replay:")
	require.ErrorIs(t, err, os.ErrNotExist)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"schema": "vetbench.receipt/v1", "items": [`), 0o600))
	_, err = replay.ReadFile(bad)
	require.ErrorContains(t, err, "replay:")
	require.ErrorContains(t, err, "bad.json")
}

// TestFromReceipt keys answers on item ids: an item without an id, or one
// recorded twice, is refused; an item that failed (no answers) is left out.
func TestFromReceipt(t *testing.T) {
	_, err := replay.FromReceipt(nil)
	require.ErrorContains(t, err, "nil receipt")
	a := judgments.Answer{Question: "q", Kind: judgments.Noul, Labels: []string{"false", "true"}, Probabilities: map[string]float64{"false": 0.4, "true": 0.6}}
	r := &receipts.Receipt{Source: receipts.SourceVetbench, Set: "s", Items: []receipts.Item{
		{ID: "a", Answers: []judgments.Answer{a}}, {ID: "failed", Error: "HTTP 500"},
	}}
	rec, err := replay.FromReceipt(r)
	require.NoError(t, err)
	require.Equal(t, replay.Recorded{Source: "vetbench:s", Answers: map[string][]judgments.Answer{"a": {a}}}, rec)

	r.Items = append(r.Items, receipts.Item{ID: "a", Answers: []judgments.Answer{a}})
	_, err = replay.FromReceipt(r)
	require.ErrorContains(t, err, `item "a" recorded twice`)
	r.Items = []receipts.Item{{Answers: []judgments.Answer{a}}}
	_, err = replay.FromReceipt(r)
	require.ErrorContains(t, err, "item 0 has no id")
}

// TestTwinReplaysTypevet serves typevet's recording from the twin and asks
// the checks generator's items (which carry typevet's ids) through the
// judgments client: every Noul and verdict distribution comes back exactly;
// the Score distributions typevet did not publish come back as stand-ins
// with the recorded expected level and most probable level; nothing falls
// back to the answer model.
func TestTwinReplaysTypevet(t *testing.T) {
	rec, err := replay.ReadFile(typevetChecks)
	require.NoError(t, err)
	rp, err := stub.NewReplay(rec.Source, rec.Answers)
	require.NoError(t, err)
	require.Equal(t, 140, rp.Reconstructed)
	require.Zero(t, rp.Omitted)

	instant := stub.ProfileFast() // no engine time: answers only
	instant.StepBase, instant.StepPerSeq, instant.StepPerImage = 0, 0, 0
	rs, err := stub.Start(stub.Config{Profile: instant, Replay: &rp})
	require.NoError(t, err)
	defer rs.Close()
	cl := judgments.NewClient(rs.URL(), judgments.WithModel(rs.Model()))
	spec := checks.Spec()
	ctrl, err := cl.Tokenize(t.Context(), spec.Controls())
	require.NoError(t, err)
	cases, err := checks.Cases(0, checks.DefaultRows)
	require.NoError(t, err)
	exact, scores := 0, 0
	for i, c := range cases {
		it := judgments.Item{ID: c.ID(), State: fmt.Sprintf(checks.State, c.Row.Text()), Images: []judgments.Image{tinyPNG(t, i)}}
		j, err := cl.Judge(t.Context(), spec, ctrl, it)
		require.NoError(t, err)
		recorded := map[string]judgments.Answer{}
		for _, a := range rec.Answers[it.ID] {
			recorded[a.Question] = a
		}
		for _, a := range j.Answers {
			want, ok := recorded[a.Question]
			require.True(t, ok, "%s %s not recorded", it.ID, a.Question)
			if len(want.Probabilities) == 0 {
				require.Equal(t, want.Label, a.Label, "%s %s: most probable level", it.ID, a.Question)
				require.InDelta(t, want.Value, a.Value, 1e-9, "%s %s: expected level", it.ID, a.Question)
				scores++
				continue
			}
			for l, p := range want.Probabilities {
				require.InDelta(t, p, a.Probabilities[l], 1e-12, "%s %s %s", it.ID, a.Question, l)
			}
			exact++
		}
	}
	require.Equal(t, 140*3, exact)
	require.Equal(t, 140, scores)
	st := rs.Stats()
	require.Equal(t, 140*4, st.ReplayServed)
	require.Zero(t, st.ReplayMissing)
	require.Zero(t, st.ReplayMismatch)
}

// tinyPNG is a distinct 1000×440 check-sized image: the twin reads only an
// image's size and digest, and replay keys on the request id.
func tinyPNG(t *testing.T, seed int) judgments.Image {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, 1000, 440), color.Palette{color.White, color.Black})
	for b := range 32 {
		if seed>>b&1 == 1 {
			img.SetColorIndex(10+b, 10, 1)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img))
	return judgments.Image{MIME: "image/png", Data: buf.Bytes()}
}
