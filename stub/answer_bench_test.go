package stub

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGreedyIsRankFirst: the sampled token without the sort is the
// sort's first, over answer-model distributions of every shape and a
// tie (broken by the lower id, as rank breaks it).
func TestGreedyIsRankFirst(t *testing.T) {
	for n := range 12 {
		for k := range 50 {
			key := []byte(fmt.Sprintf("content %d/%d", n, k))
			lps := modelDistribution(key, n, DefaultSpread).logprobs()
			require.Equal(t, rank(lps)[0], greedy(lps), "n=%d k=%d", n, k)
		}
	}
	tie := map[int]float64{7: -0.5, 3: -0.5, 9: -2}
	require.Equal(t, ranked{3, -0.5}, greedy(tie))
	require.Equal(t, rank(tie)[0], greedy(tie))
}

// BenchmarkFirstToken is the answer model's work for a request's first
// token — a stream's first chunk waits on it at its due time, once per
// request in flight, so at c=128 and time scale 10 it is CPU the model
// does not have. Text, no logprobs (the tokens workload), and the
// judgments' logprob_token_ids.
func BenchmarkFirstToken(b *testing.B) {
	s, err := New(Config{Profile: ProfileE2BH200NVL()})
	require.NoError(b, err)
	defer s.Close()
	for _, tc := range []struct{ name, extra string }{
		{"text", ``},
		{"logprob_token_ids", `"logprobs":true,"logprob_token_ids":[236800,236801,236802],`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := &chatCall{}
			body := fmt.Sprintf(`{%s"messages":[{"role":"user","content":"unique 000001 w w w w w w w w"}],"max_tokens":128,"stream":true}`, tc.extra)
			require.Nil(b, s.parseChat([]byte(body), c))
			r := &request{prompt: c.p, maxTokens: c.maxTokens, batchSeqs: 32}
			decodeFaults(r, &c.req, nil, c.maxTokens)
			r.generated = 1
			b.ReportAllocs()
			for b.Loop() {
				_ = s.answer("bench", &c.req, c.topK, r)
			}
		})
	}
}
