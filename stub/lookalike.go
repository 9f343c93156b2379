package stub

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"

	"github.com/vetbench/vetbench/judgments"
)

// The look-alike sets stand in for typevet's LFW faces and CEDAR
// signatures where the twin is calibrated (its tests, make fit FIT=h100):
// typevet's questions and state wording, images of the real sets' sizes
// (LFW faces 250×250 JPEG, CEDAR signatures of varying size PNG; checks
// 1000×440 PNG), one distinct image per item. The twin reads only the
// images' sizes and digests, so pixels do not matter; the real sets'
// images are not the project's to ship.

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

// signatureKinds are CEDAR's pair kinds, in the look-alikes' order.
var signatureKinds = []string{"genuine_genuine", "genuine_skilled", "genuine_random"}

// TypevetLookalikeFaces is LFW's shape: perClass same and perClass
// different pairs of 250×250 JPEGs (alternating), typevet's subset its
// first 60.
func TypevetLookalikeFaces(perClass int) (TypevetSet, error) {
	set := TypevetSet{Name: "faces", Spec: facesSpec(), Subset: min(60, 2*perClass)}
	state := "Image 1 and image 2 are two photographs. Each photograph can show more than one face. Compare the main face in image 1 with the main face in image 2."
	for i := range 2 * perClass {
		a, err := LookalikeJPEG(250, 250, 2*i)
		if err != nil {
			return TypevetSet{}, err
		}
		b, err := LookalikeJPEG(250, 250, 2*i+1)
		if err != nil {
			return TypevetSet{}, err
		}
		set.Items = append(set.Items, judgments.Item{ID: fmt.Sprintf("%d:face_%04d:face_%04d", i%10+1, 2*i, 2*i+1), State: state,
			Images: []judgments.Image{a, b}})
	}
	return set, nil
}

// TypevetLookalikeSignatures is CEDAR's shape: perKind pairs of each of
// signatureKinds (in turn), PNG scans whose sizes vary as CEDAR's do,
// typevet's subset its first 60.
func TypevetLookalikeSignatures(perKind int) (TypevetSet, error) {
	set := TypevetSet{Name: "signatures", Spec: signaturesSpec(), Subset: min(60, 3*perKind)}
	state := "Image 1 and image 2 each show one handwritten signature. Image 1 is a reference signature. Compare the signature in image 2 with the signature in image 1."
	size := func(k int) (int, int) { return 560 + (k*37)%400, 210 + (k*53)%160 }
	for i := range 3 * perKind {
		w1, h1 := size(2 * i)
		w2, h2 := size(2*i + 1)
		a, err := LookalikePNG(w1, h1, 2*i)
		if err != nil {
			return TypevetSet{}, err
		}
		b, err := LookalikePNG(w2, h2, 2*i+1)
		if err != nil {
			return TypevetSet{}, err
		}
		set.Items = append(set.Items, judgments.Item{ID: fmt.Sprintf("%s:original_%d_1:sig_%d", signatureKinds[i%3], i, i), State: state,
			Images: []judgments.Image{a, b}})
	}
	return set, nil
}

// LookalikePNG is a w×h two-colour PNG whose pixels encode seed, so every
// seed gives distinct bytes (1-bit palette: quick to encode and small).
// It is byte for byte twintest.PNGImage (a test holds them equal).
func LookalikePNG(w, h, seed int) (judgments.Image, error) {
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Gray{Y: 0xf0}, color.Gray{}})
	for b := range 32 {
		if seed>>b&1 == 1 {
			img.SetColorIndex(10+b%max(1, w-20), 10, 1)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return judgments.Image{}, err
	}
	return judgments.Image{MIME: "image/png", Data: buf.Bytes()}, nil
}

// LookalikeJPEG is a w×h grey JPEG whose pixels depend on seed (byte for
// byte twintest.JPEGImage).
func LookalikeJPEG(w, h, seed int) (judgments.Image, error) {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(seed*31 + i/w)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
		return judgments.Image{}, err
	}
	return judgments.Image{MIME: "image/jpeg", Data: buf.Bytes()}, nil
}
