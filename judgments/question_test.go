package judgments

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func checksQuestions() []Question {
	return []Question{
		NewNoul("payee_matches", "Is the payee on the check the payee in the register row?",
			"The check names the register payee.", "The check names a different payee."),
		NewNoul("amounts_match", "Do the number amount and the words amount on the check both equal the register amount?",
			"Both amounts on the check equal the register amount.", "One or both amounts on the check differ from the register."),
		NewChoice("verdict", "Compare the check with the register row. Choose one:",
			Option{"consistent", "The check agrees with the register row and is signed."},
			Option{"payee_mismatch", "The payee differs from the register row."},
			Option{"amount_mismatch", "An amount differs from the register row."},
			Option{"date_mismatch", "The date differs from the register row."},
			Option{"unsigned", "There are no handwritten signature strokes on the signature line. Printed marks such as VOID do not count."},
			Option{"cannot_tell", "The image is not clear enough to decide."}),
		NewScore("legibility", "Rate how clearly you can read the check text:",
			"No text can be read.", "Only a few words can be read.", "Some fields can be read.",
			"Most fields can be read.", "All fields can be read clearly."),
	}
}

// The digests are typevet's, read from its gemma-4-31B receipts
// (identity.prompt_digests of check_match_vllm_throughput_full_c16.json).
func TestDigestMatchesTypevet(t *testing.T) {
	want := map[string]string{
		"payee_matches": "d8a42dca122de8824ef6bbfe792f30e9888b58da5ca01f5a5e37c9e6b8387c0b",
		"amounts_match": "fe4a0b38de231349b211a79356bf9b6c003f00a391d517a762fc5d2fdae84b34",
		"verdict":       "b7ef7c4a0c25b12827252fdacba3011e1bb064231d047cac8b1626b29fcb522a",
		"legibility":    "109aca8b397e0cfeabf8e461c84b8a4af614d6ef9bba30ceeade3da9bcea1ab6",
	}
	for _, q := range checksQuestions() {
		require.Equal(t, want[q.ID], q.Digest(), q.ID)
	}
	// Positive control: one changed character changes the digest.
	q := checksQuestions()[0]
	q.Instructions += " "
	require.NotEqual(t, want["payee_matches"], q.Digest())
}

func TestPyQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:     `"plain"`,
		`a"b\c`:     `"a\"b\\c"`,
		"tab\tnl\n": `"tab\tnl\n"`,
		"é→😀":       `"\u00e9\u2192\ud83d\ude00"`,
		"<&>":       `"<&>"`,
	} {
		require.Equal(t, want, pyQuote(in), in)
	}
}

func TestFieldBlock(t *testing.T) {
	qs := checksQuestions()
	require.Equal(t, "payee_matches: Is the payee on the check the payee in the register row?\n\nOptions:\n"+
		"Control 0 → false: The check names a different payee.\n"+
		"Control 1 → true: The check names the register payee.\n\n"+
		"Answer with exactly one control string (the digit shown), not the original label text.", qs[0].FieldBlock())
	require.Equal(t, "verdict: Compare the check with the register row. Choose one:\n\nOptions:\n"+
		"0 → consistent: The check agrees with the register row and is signed.\n"+
		"1 → payee_mismatch: The payee differs from the register row.\n"+
		"2 → amount_mismatch: An amount differs from the register row.\n"+
		"3 → date_mismatch: The date differs from the register row.\n"+
		"4 → unsigned: There are no handwritten signature strokes on the signature line. Printed marks such as VOID do not count.\n"+
		"5 → cannot_tell: The image is not clear enough to decide.\n\n"+
		"Answer with exactly one control string (the digit shown), not the original label text.", qs[2].FieldBlock())
	require.Contains(t, qs[3].FieldBlock(), "Control 4 → 4: All fields can be read clearly.\n")

	// A Choice whose label looks like a control gets the "Control " prefix.
	digits := NewChoice("n", "Pick:", Option{Label: "12"}, Option{Label: "x"})
	require.Contains(t, digits.FieldBlock(), "Control 0 → 12\nControl 1 → x\n")
	// Beyond ten controls the rule mentions letters.
	var many []Option
	for i := range 11 {
		many = append(many, Option{Label: "l" + Control(i)})
	}
	require.Contains(t, NewChoice("m", "Pick:", many...).FieldBlock(), "A → lA\n\nAnswer with exactly one control string (the digit or letter shown)")
}

func TestControls(t *testing.T) {
	require.Equal(t, "0", Control(0))
	require.Equal(t, "9", Control(9))
	require.Equal(t, "A", Control(10))
	require.Equal(t, "Z", Control(35))
	require.Equal(t, "", Control(36))
	spec := Spec{Name: "checks", Questions: checksQuestions()}
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5"}, spec.Controls())
	require.NoError(t, spec.Validate())
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Question
		msg  string
	}{
		{"noid", NewScore("", "x", "a", "b"), "empty id"},
		{"one option", NewChoice("c", "x", Option{Label: "a"}), "1 options"},
		{"duplicate", NewChoice("c", "x", Option{Label: "a"}, Option{Label: "a"}), "duplicate label"},
		{"noul order", Question{ID: "n", Kind: Noul, Options: []Option{{Label: "true"}, {Label: "false"}}}, "(false, true)"},
		{"kind", Question{ID: "k", Kind: "free", Options: []Option{{Label: "a"}, {Label: "b"}}}, "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.q.Validate(), tc.msg)
		})
	}
	dup := Spec{Name: "s", Questions: []Question{checksQuestions()[0], checksQuestions()[0]}}
	require.ErrorContains(t, dup.Validate(), "duplicate question id")
}

func TestContent(t *testing.T) {
	it := Item{ID: "p", State: "Two images.", Images: []Image{{MIME: "image/png", Data: []byte{1}}, {MIME: "image/jpeg", Data: []byte{2}}}}
	q := checksQuestions()[0]
	require.Equal(t, MediaMarker+"\n"+MediaMarker+"\nTwo images.\n\n"+q.FieldBlock(), UserText(it, q))
	parts, err := Content(it, q, []string{it.Images[0].DataURL(), it.Images[1].DataURL()})
	require.NoError(t, err)
	require.Len(t, parts, 3)
	require.Equal(t, "data:image/png;base64,AQ==", parts[0].ImageURL.URL)
	require.Equal(t, "data:image/jpeg;base64,Ag==", parts[1].ImageURL.URL)
	require.Equal(t, "Two images.\n\n"+q.FieldBlock(), parts[2].Text)
	_, err = Content(it, q, []string{"one"})
	require.ErrorContains(t, err, "2 media markers for 1 images")
}

func TestRequestID(t *testing.T) {
	id := RequestID("vetbench-1", "r00:clean", "verdict")
	item, q, ok := ParseRequestID(id)
	require.True(t, ok)
	require.Equal(t, "r00:clean", item)
	require.Equal(t, "verdict", q)
	_, _, ok = ParseRequestID("chatcmpl-123")
	require.False(t, ok)
}
