package receipts_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

func TestOffFormat(t *testing.T) {
	t.Parallel()
	r := sample(t)
	require.Nil(t, receipts.OffFormatOf(r.Items), "no sampled token recorded: unknown, not 0")
	for i := range r.Items {
		for j := range r.Items[i].Answers {
			a := &r.Items[i].Answers[j]
			a.Sampled = "token_id:236771"
			if i == 0 && a.Question == "verdict" {
				a.Sampled, a.OffFormat = "token_id:818", true
			}
		}
	}
	o := receipts.OffFormatOf(r.Items)
	require.NotNil(t, o)
	require.Equal(t, 1, o.Total)
	require.Equal(t, map[string]int{"same": 0, "verdict": 1, "quality": 0}, o.ByQuestion)
	require.Equal(t, "1 of "+strconv.Itoa(o.Answers)+" (verdict 1)", o.String())
	r.OffFormat = o
	r.Identity.Digest = r.IdentityDigest()
	require.NoError(t, r.Validate())
	r.OffFormat.ByQuestion["verdict"] = 0
	require.ErrorContains(t, r.Validate(), "off_format.by_question.verdict: 0, but the items say 1")
	r.OffFormat = receipts.OffFormatOf(r.Items)
	r.OffFormat.Total = 0
	require.ErrorContains(t, r.Validate(), "off_format: 0 of")
	// Discarded and failed items count in no figure.
	r.OffFormat = nil
	r.Items[0].Discarded = true
	require.Zero(t, receipts.OffFormatOf(r.Items).Total)
}
