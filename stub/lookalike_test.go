package stub

import (
	"fmt"
	"testing"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// The look-alike sets below stand in for the fixture generators in tests of
// the twin: typevet's questions and state wording, images of the real sets'
// sizes (checks 1000×440 PNG, LFW faces 250×250 JPEG, CEDAR signatures of
// varying size PNG), one distinct image per item. The twin reads only the
// images' sizes and digests, so pixels do not matter.

func checksSpec() judgments.Spec {
	return judgments.Spec{Name: "checks", Questions: []judgments.Question{
		judgments.NewNoul("payee_matches", "Is the payee on the check the payee in the register row?",
			"The check names the register payee.", "The check names a different payee."),
		judgments.NewNoul("amounts_match", "Do the number amount and the words amount on the check both equal the register amount?",
			"Both amounts on the check equal the register amount.", "One or both amounts on the check differ from the register."),
		judgments.NewChoice("verdict", "Compare the check with the register row. Choose one:",
			judgments.Option{Label: "consistent", Description: "The check agrees with the register row and is signed."},
			judgments.Option{Label: "payee_mismatch", Description: "The payee differs from the register row."},
			judgments.Option{Label: "amount_mismatch", Description: "An amount differs from the register row."},
			judgments.Option{Label: "date_mismatch", Description: "The date differs from the register row."},
			judgments.Option{Label: "unsigned", Description: "There are no handwritten signature strokes on the signature line. Printed marks such as VOID do not count."},
			judgments.Option{Label: "cannot_tell", Description: "The image is not clear enough to decide."}),
		judgments.NewScore("legibility", "Rate how clearly you can read the check text:",
			"No text can be read.", "Only a few words can be read.", "Some fields can be read.", "Most fields can be read.", "All fields can be read clearly."),
	}}
}

func facesSpec() judgments.Spec {
	return judgments.Spec{Name: "faces", Questions: []judgments.Question{
		judgments.NewNoul("same_person", "Do image 1 and image 2 show the same person?",
			"The main faces are the same person.", "The main faces are two different people."),
		judgments.NewChoice("verdict", "Compare the main face in image 1 with the main face in image 2. Choose one:",
			judgments.Option{Label: "same_person", Description: "The main faces are the same person."},
			judgments.Option{Label: "different_person", Description: "The main faces are two different people."},
			judgments.Option{Label: "cannot_tell", Description: "The images do not show enough of a face to decide."}),
		judgments.NewScore("face_visibility", "Rate how clearly image 2 shows the main face:",
			"No face is visible.", "A face is present but most of it is hidden or blurred.", "Part of the face is visible.", "Most of the face is visible.", "All of the face is clearly visible."),
	}}
}

func signaturesSpec() judgments.Spec {
	return judgments.Spec{Name: "signatures", Questions: []judgments.Question{
		judgments.NewNoul("same_writer", "Did the same person write image 1 and image 2?",
			"The same person wrote both signatures.", "Two different people wrote the signatures."),
		judgments.NewChoice("verdict", "Compare the signature in image 2 with the signature in image 1. Choose one:",
			judgments.Option{Label: "same_writer", Description: "The same person wrote both signatures."},
			judgments.Option{Label: "different_writer", Description: "Another person wrote image 2, with no attempt to copy image 1."},
			judgments.Option{Label: "skilled_forgery_suspected", Description: "Another person wrote image 2 as a copy of the signature in image 1."},
			judgments.Option{Label: "cannot_tell", Description: "The images do not show enough to decide."}),
		judgments.NewScore("image_quality", "Rate how clearly image 2 shows the signature:",
			"No signature is visible.", "A signature is present but most of it is unclear.", "Part of the signature is clear.", "Most of the signature is clear.", "All of the signature is clear."),
	}}
}

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

// lookalikeFaces is LFW's shape: perClass same and perClass different
// pairs of 250×250 JPEGs.
func lookalikeFaces(t testing.TB, perClass int) fixtures.Set {
	t.Helper()
	set := fixtures.Set{Name: "faces", Spec: facesSpec(), Verdict: "verdict", CannotTell: "cannot_tell",
		Pins: fixtures.Pins{Dataset: "look-alike faces", Source: fixtures.SourceSynthetic}}
	state := "Image 1 and image 2 are two photographs. Each photograph can show more than one face. Compare the main face in image 1 with the main face in image 2."
	for i := range 2 * perClass {
		set.Cases = append(set.Cases, fixtures.Case{
			Item: judgments.Item{ID: fmt.Sprintf("%d:face_%04d:face_%04d", i%10+1, 2*i, 2*i+1), State: state,
				Images: []judgments.Image{twintest.JPEGImage(t, 250, 250, 2*i), twintest.JPEGImage(t, 250, 250, 2*i+1)}},
			Group: []string{"same", "different"}[i%2],
		})
	}
	return set
}

// lookalikeSignatures is CEDAR's shape: perKind pairs of three kinds, PNG
// scans whose sizes vary as CEDAR's do.
func lookalikeSignatures(t testing.TB, perKind int) fixtures.Set {
	t.Helper()
	set := fixtures.Set{Name: "signatures", Spec: signaturesSpec(), Verdict: "verdict", CannotTell: "cannot_tell",
		Pins: fixtures.Pins{Dataset: "look-alike signatures", Source: fixtures.SourceSynthetic}}
	state := "Image 1 and image 2 each show one handwritten signature. Image 1 is a reference signature. Compare the signature in image 2 with the signature in image 1."
	kinds := []string{"genuine_genuine", "genuine_skilled", "genuine_random"}
	for i := range 3 * perKind {
		size := func(k int) (int, int) { return 560 + (k*37)%400, 210 + (k*53)%160 }
		w1, h1 := size(2 * i)
		w2, h2 := size(2*i + 1)
		set.Cases = append(set.Cases, fixtures.Case{
			Item: judgments.Item{ID: fmt.Sprintf("%s:original_%d_1:sig_%d", kinds[i%3], i, i), State: state,
				Images: []judgments.Image{twintest.PNGImage(t, w1, h1, 2*i), twintest.PNGImage(t, w2, h2, 2*i+1)}},
			Group: kinds[i%3],
		})
	}
	return set
}
