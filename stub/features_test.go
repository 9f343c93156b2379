package stub

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSpeculativeConfig(t *testing.T) {
	sp, err := ParseSpeculativeConfig(`{"method":"dspark","num_speculative_tokens":3,"model":"x","draft_tensor_parallel_size":1}`)
	require.NoError(t, err)
	require.Equal(t, Speculative{Method: "dspark", NumSpeculativeTokens: 3}, sp)
	again, err := ParseSpeculativeConfig(Speculative{Method: "mtp", NumSpeculativeTokens: 2, Acceptance: []float64{0.9, 0.5}}.String())
	require.NoError(t, err)
	require.Equal(t, []float64{0.9, 0.5}, again.Acceptance)
	for name, bad := range map[string]string{
		"not_json":     `method=mtp`,
		"no_k":         `{"method":"mtp"}`,
		"k_zero":       `{"method":"mtp","num_speculative_tokens":0}`,
		"k_string":     `{"num_speculative_tokens":"3"}`,
		"k_huge":       `{"num_speculative_tokens":1000}`,
		"rates_length": `{"num_speculative_tokens":3,"acceptance":[0.5]}`,
		"rate_over_1":  `{"num_speculative_tokens":1,"acceptance":[1.5]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSpeculativeConfig(bad)
			require.Error(t, err)
			require.Contains(t, err.Error(), "speculative")
		})
	}
}

// The acceptance draws follow the per-position rates: over many steps the
// mean tokens per step is the closed form, and each position's share is
// the product of the rates up to it, as vLLM's per-position counters
// would read.
func TestSpeculativeAcceptanceFollowsRates(t *testing.T) {
	sp := &Speculative{NumSpeculativeTokens: 3, Acceptance: []float64{0.9, 0.7, 0.5}}
	var st specStats
	const steps = 40000
	for pos := range steps {
		st.observe(3, sp.accepted([]byte("prompt"), pos))
	}
	require.InDelta(t, 1+0.9+0.63+0.315, sp.MeanAcceptanceLength(), 1e-12)
	require.InDelta(t, sp.MeanAcceptanceLength(), 1+st.accepted/st.drafts, 0.02)
	for i, want := range []float64{0.9, 0.63, 0.315} {
		require.InDelta(t, want, st.perPos[i]/st.drafts, 0.01, "position %d", i)
	}
	require.Equal(t, float64(3*steps), st.draftTokens)
	// Positive control: a drafter the target never agrees with yields the
	// bonus token only.
	never := &Speculative{NumSpeculativeTokens: 3, Acceptance: []float64{0, 1, 1}}
	for pos := range 100 {
		require.Zero(t, never.accepted([]byte("p"), pos))
	}
	require.Zero(t, (*Speculative)(nil).accepted([]byte("p"), 1))
}

// The chunker sends as vLLM's output processor does with
// --stream-interval: the first token at once, then every N or more, and
// whatever is left when the request finishes.
func TestChunkerStreamInterval(t *testing.T) {
	for _, tc := range []struct {
		interval int
		steps    []int // tokens per engine step
		want     []int // tokens per chunk
	}{
		{1, []int{1, 1, 1, 1}, []int{1, 1, 1, 1}},
		{0, []int{1, 3, 2, 4}, []int{1, 3, 2, 4}}, // speculative: one chunk per step
		{4, []int{1, 1, 1, 1, 1, 1, 1}, []int{1, 4, 2}},
		{4, []int{1, 3, 2, 4, 1}, []int{1, 5, 4, 1}},
		{10, []int{1, 1, 1}, []int{1, 2}},
	} {
		t.Run(fmt.Sprint(tc.interval, tc.steps), func(t *testing.T) {
			c := chunker{interval: tc.interval}
			total := 0
			var got []int
			for i, n := range tc.steps {
				total += n
				if k := c.take(total, i == len(tc.steps)-1); k > 0 {
					got = append(got, k)
				}
			}
			require.Equal(t, tc.want, got)
			sum := 0
			for _, k := range got {
				sum += k
			}
			require.Equal(t, total, sum, "every token is sent once")
		})
	}
	require.Equal(t, []int{1, 3, 1, 2}, stepGroups([]float64{1, 2, 2, 2, 3, 4, 4}))
}

func TestReasoningKeysByVersion(t *testing.T) {
	for v, want := range map[string][2]bool{
		"0.10.2":                      {false, true},
		"0.11.0":                      {false, true},
		"0.11.1":                      {true, true},
		"0.15.9":                      {true, true},
		"0.16.0":                      {true, false},
		"0.28.1rc1.dev317+g1356635d8": {true, false},
		Version:                       {true, false},
		"garbage":                     {true, false},
	} {
		r, rc := reasoningKeys(v)
		require.Equal(t, want, [2]bool{r, rc}, v)
	}
}

func TestReasoningThinks(t *testing.T) {
	v4 := &Reasoning{Parser: "deepseek_v4"}
	require.False(t, v4.thinks(nil))
	require.True(t, v4.thinks(map[string]any{"thinking": true}))
	require.True(t, v4.thinks(map[string]any{"enable_thinking": true}))
	on := &Reasoning{Parser: "deepseek_v4", ThinkByDefault: true}
	require.True(t, on.thinks(nil))
	require.False(t, on.thinks(map[string]any{"thinking": false}))
	require.True(t, (&Reasoning{Parser: "deepseek_r1"}).thinks(map[string]any{"thinking": false}))
	require.False(t, (*Reasoning)(nil).thinks(map[string]any{"thinking": true}))
	require.Error(t, (&Reasoning{Parser: "qwen9"}).validate())
}

// Text splits at the end-of-thinking token; an output that is that token
// alone has no delta (vLLM sends no chunk for it).
func TestChannelText(t *testing.T) {
	text := func(i int) string { return fmt.Sprintf("<%d>", i) }
	r, c, ok := channelText(0, 6, 3, text)
	require.Equal(t, "<0><1><2>", r)
	require.Equal(t, "<4><5>", c)
	require.True(t, ok)
	_, _, ok = channelText(3, 4, 3, text)
	require.False(t, ok)
	r, c, _ = channelText(0, 3, 0, text)
	require.Empty(t, r)
	require.Equal(t, "<0><1><2>", c)
}

// The loop model's chance grows with context and with the batch, and a
// looping generation writes an exactly periodic tail and no EOS.
func TestLoopingModel(t *testing.T) {
	l := &Looping{Base: 0.01, BaseContext: 8192, ContextExponent: 0.5, BatchExponent: 0.5, MinPeriod: 20, MaxPeriod: 80, MinOnset: 100, MaxOnset: 400}
	require.NoError(t, l.validate())
	require.InDelta(t, 0.01, l.Probability(8192, 1), 1e-12)
	require.Greater(t, l.Probability(65536, 1), l.Probability(8192, 1))
	require.Greater(t, l.Probability(8192, 16), l.Probability(8192, 1))
	require.Equal(t, 1.0, l.Probability(1<<20, 128))
	loops := 0
	const n = 4000
	for i := range n {
		if _, p := l.draw([]byte(fmt.Sprint("prompt", i)), 8192*4, 4); p > 0 {
			loops++
		}
	}
	require.InDelta(t, l.Probability(8192*4, 4), float64(loops)/n, 0.015)

	sure := *l
	sure.Base = 1
	g := newGeneration([]byte("k"), false, 0, false)
	g.settle(&sure, 8192, 1)
	require.Positive(t, g.period)
	require.Zero(t, g.eosAt, "a loop never samples EOS")
	var b strings.Builder
	for pos := g.loopAt; pos < g.loopAt+5*g.period; pos++ {
		b.WriteString(tokenText(g.token(pos)))
	}
	cycle := b.String()[:len(b.String())/5]
	require.Equal(t, strings.Repeat(cycle, 5), b.String())

	none := newGeneration([]byte("k"), true, 0, false)
	none.settle(&Looping{Base: 0, BaseContext: 1, MinPeriod: 1, MaxPeriod: 1, MinOnset: 1, MaxOnset: 1}, 1<<20, 128)
	require.Zero(t, none.period)
	require.Error(t, (&Looping{Base: 2, BaseContext: 1, MinPeriod: 1, MaxPeriod: 1, MinOnset: 1, MaxOnset: 1}).validate())
	require.False(t, math.IsNaN(l.Probability(0, 0)))
}

// Long texts tokenize once and come back the same; the cache keeps to its
// bound, oldest out first.
func TestTextCache(t *testing.T) {
	c := &textCache{max: 1000, ids: map[string][]int{}}
	text := strings.Repeat("the harbour kept a ledger ", 30)
	var want []int
	for _, tk := range Tokenize(text) {
		want = append(want, tk.ID)
	}
	require.Equal(t, want, c.tokenIDs(text))
	require.Equal(t, want, c.tokenIDs(text))
	require.Len(t, c.order, 1)
	for i := range 20 {
		c.tokenIDs(fmt.Sprintf("%d %s", i, text))
	}
	require.LessOrEqual(t, c.held, c.max)
	_, kept := c.ids[text]
	require.False(t, kept, "the oldest went first")
	long := strings.Repeat("x", longText)
	require.Equal(t, appendText(nil, long), appendText(nil, long))
}
