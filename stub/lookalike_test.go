package stub

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// The look-alike sets below stand in for the fixture generators in tests of
// the twin: typevet's questions and state wording, images of the real sets'
// sizes (checks 1000×440 PNG, LFW faces 250×250 JPEG, CEDAR signatures of
// varying size PNG), one distinct image per item. The twin reads only the
// images' sizes and digests, so pixels do not matter.

var checkVariants = []string{"clean", "payee_changed", "written_amount_changed", "both_amounts_changed", "wrong_date", "unsigned", "low_legibility"}

// typevet's invented payees (check_match/cases.py).
var lookalikePayees = []string{"Northwind Supply Co.", "Bluefin Paper Works", "Copperleaf Landscaping", "Quillmore Office Goods",
	"Harborview Plumbing LLC", "Maple Hollow Bakery", "Stonebridge Tutoring", "Pinecrest Auto Repair", "Lanternfield Electric",
	"Redwick Garden Center", "Silverbrook Catering", "Oakmere Print Shop", "Foxglove Cleaning Service", "Tidewater Moving Co.",
	"Brightmoor Music School", "Juniper Lane Florist", "Cobalt Ridge Roofing", "Willowmere Pet Clinic", "Amberfield Hardware",
	"Kestrel Bay Surveying", "Marigold Street Deli", "Ironvale Tool Rental", "Seabright Window Washers", "Thistledown Book Binding"}

// lookalikeChecks is typevet's checks set shape: rows × 7 variants, one
// 1000×440 PNG each, the register row in the state.
func lookalikeChecks(t testing.TB, rows int) fixtures.Set {
	t.Helper()
	set := fixtures.Set{Name: "checks", Spec: checksSpec(), Verdict: "verdict", CannotTell: "cannot_tell",
		Pins: fixtures.Pins{Dataset: "look-alike checks", Source: fixtures.SourceSynthetic}}
	for r := range rows {
		cents := 1500 + (r*7919*7919)%498500
		row := fmt.Sprintf("check number %d; date 2025-%02d-%02d; payee %s; amount $%s",
			1001+r, 1+r%12, 1+(r*7)%28, lookalikePayees[r%len(lookalikePayees)], dollars(cents))
		state := "The image shows one paper check. A check register row lists what the check must show: " + row +
			". Compare the check in the image with the register row. The check shows the amount two times: as a number in the box and in words on the line below the payee."
		for v, variant := range checkVariants {
			id := fmt.Sprintf("r%02d:%s", r, variant)
			set.Cases = append(set.Cases, fixtures.Case{
				Item:  judgments.Item{ID: id, State: state, Images: []judgments.Image{twintest.PNGImage(t, 1000, 440, r*7+v)}},
				Group: variant,
			})
		}
	}
	return set
}

func dollars(cents int) string {
	d := cents / 100
	s := fmt.Sprintf("%d", d)
	if d >= 1000 {
		s = fmt.Sprintf("%d,%03d", d/1000, d%1000)
	}
	return fmt.Sprintf("%s.%02d", s, cents%100)
}

// lookalikeFaces is LFW's shape as a fixture set (TypevetLookalikeFaces),
// grouped same and different.
func lookalikeFaces(t testing.TB, perClass int) fixtures.Set {
	t.Helper()
	ts, err := TypevetLookalikeFaces(perClass)
	if err != nil {
		t.Fatal(err)
	}
	set := fixtures.Set{Name: "faces", Spec: ts.Spec, Verdict: "verdict", CannotTell: "cannot_tell",
		Pins: fixtures.Pins{Dataset: "look-alike faces", Source: fixtures.SourceSynthetic}}
	for i, it := range ts.Items {
		set.Cases = append(set.Cases, fixtures.Case{Item: it, Group: []string{"same", "different"}[i%2]})
	}
	return set
}

// lookalikeSignatures is CEDAR's shape as a fixture set
// (TypevetLookalikeSignatures), grouped by kind.
func lookalikeSignatures(t testing.TB, perKind int) fixtures.Set {
	t.Helper()
	ts, err := TypevetLookalikeSignatures(perKind)
	if err != nil {
		t.Fatal(err)
	}
	set := fixtures.Set{Name: "signatures", Spec: ts.Spec, Verdict: "verdict", CannotTell: "cannot_tell",
		Pins: fixtures.Pins{Dataset: "look-alike signatures", Source: fixtures.SourceSynthetic}}
	for i, it := range ts.Items {
		set.Cases = append(set.Cases, fixtures.Case{Item: it, Group: signatureKinds[i%3]})
	}
	return set
}

// TestLookalikeImages: the look-alike images cmd/twinfit builds its
// checks from are byte for byte the tests' (twintest's), so a fit and the
// tests that assert it see the same requests; distinct seeds give
// distinct images (the control).
func TestLookalikeImages(t *testing.T) {
	for _, seed := range []int{0, 1, 62, 440} {
		p, err := LookalikePNG(1000, 440, seed)
		require.NoError(t, err)
		require.Equal(t, twintest.PNGImage(t, 1000, 440, seed), p, seed)
		j, err := LookalikeJPEG(250, 250, seed)
		require.NoError(t, err)
		require.Equal(t, twintest.JPEGImage(t, 250, 250, seed), j, seed)
	}
	a, _ := LookalikePNG(1000, 440, 1)
	b, _ := LookalikePNG(1000, 440, 2)
	require.NotEqual(t, a.Data, b.Data)
}
