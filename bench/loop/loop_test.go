package loop

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomText is n characters of lowercase letters and spaces from seed.
func randomText(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const alphabet = "abcdefghijklmnopqrstuvwxyz     "
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func numberedCode(lines int) string {
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "%4d | x := compute(x, %d)\n", i, i)
	}
	return b.String()
}

func distinctSections(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "## Section %d\n\nIn part %d the reader meets %s and the ideas of chapter %d.\n\n", i, i, randomText(uint64(i), 180), i)
	}
	return b.String()
}

var cycle1500 = randomText(7, 1500)

var cases = []struct {
	name   string
	text   string
	status Status
	period int
}{
	{"duct_x1024", strings.Repeat("duct", 1024), Confirmed, 4},
	{"duct_x1023", strings.Repeat("duct", 1023), Suspected, 4},
	{"random_1500_x4", strings.Repeat(cycle1500, 4), Confirmed, 1500},
	{"random_1500_x3", strings.Repeat(cycle1500, 3), Suspected, 1500},
	{"multibyte_x1400", strings.Repeat("ダクト", 1400), Confirmed, 3},
	{"prefix_then_loop", "Once upon a time, a model began." + strings.Repeat("and again ", 500), Confirmed, 10},
	{"numbered_code_lines", numberedCode(800), Clean, 0},
	{"spaces", strings.Repeat(" ", 20000), Clean, 0},
	{"newlines", strings.Repeat("\n", 20000), Clean, 0},
	{"mixed_whitespace", strings.Repeat(" \t\n  ", 4000), Clean, 0},
	{"distinct_sections", distinctSections(60), Clean, 0},
	{"non_periodic", randomText(42, 20000), Clean, 0},
	{"short", strings.Repeat("ab", 400), Clean, 0},
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := Check(tc.text)
			require.Equal(t, tc.status, f.Status, "%+v", f)
			require.Equal(t, tc.period, f.PeriodChars)
			if tc.status == Clean {
				require.Equal(t, Finding{}, f)
				return
			}
			n := len([]rune(tc.text))
			require.Equal(t, n, f.DetectedAtChar)
			require.Equal(t, n-f.RepeatedChars, f.StartChar)
			require.Equal(t, f.RepeatedChars/f.PeriodChars, f.CompleteCycles)
			require.Len(t, f.PeriodSHA256, 64)
			require.LessOrEqual(t, len([]rune(f.Cycle)), cycleExcerpt)
			require.LessOrEqual(t, len([]rune(f.Tail)), tailExcerpt)
		})
	}
}

func TestThresholdsAreTheConfirmationRule(t *testing.T) {
	t.Parallel()
	f := Check(strings.Repeat("duct", 1024))
	require.Equal(t, Finding{
		Status: Confirmed, PeriodChars: 4, CompleteCycles: 1024, RepeatedChars: 4096,
		StartChar: 0, DetectedAtChar: 4096, PeriodSHA256: f.PeriodSHA256,
		Cycle: "duct", Tail: strings.Repeat("duct", 256),
	}, f)
	// The tail starts right after the prefix: its final '.' does not continue
	// the cycle backwards.
	prefix := "Once upon a time, a model began."
	g := Check(prefix + strings.Repeat("and again ", 500))
	require.Equal(t, len(prefix), g.StartChar)
	require.Equal(t, 500, g.CompleteCycles)
	// Many cycles but under 4096 characters: suspected only.
	h := Check(strings.Repeat("ab", 2000))
	require.Equal(t, Suspected, h.Status)
	require.Equal(t, 2000, h.CompleteCycles)
	// 4096 characters in under 4 cycles cannot happen with 3·period
	// required, so the cycle rule shows with a long cycle: 3 cycles of 1500.
	require.Equal(t, 3, Check(strings.Repeat(cycle1500, 3)).CompleteCycles)
}

func TestWhitespaceCyclesAreSkippedButNotTheirLoops(t *testing.T) {
	t.Parallel()
	// A whitespace-only cycle is skipped, so the same occurrence search
	// goes on to a longer period with text in it.
	text := strings.Repeat("word"+strings.Repeat(" ", 60), 80)
	f := Check(text)
	require.Equal(t, Confirmed, f.Status)
	require.Equal(t, 64, f.PeriodChars)
}

// feed streams text through a detector in fragments of the sizes next
// returns, then closes it.
func feed(text string, next func() int) Finding {
	var d Detector
	b := []byte(text)
	for len(b) > 0 {
		k := min(next(), len(b)) // bytes, so multi-byte characters get split
		d.Write(string(b[:k]))
		b = b[k:]
	}
	return d.Close()
}

func TestFragmentationDoesNotChangeFindings(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			whole := feed(tc.text, func() int { return len(tc.text) })
			require.Equal(t, tc.status, whole.Status, "%+v", whole)
			splits := map[string]func() int{
				"one_byte": func() int { return 1 },
				"five":     func() int { return 5 },
				"block":    func() int { return CheckChars },
				"odd":      func() int { return 257 },
			}
			for seed := range uint64(3) {
				rng := rand.New(rand.NewPCG(seed, 1))
				splits[fmt.Sprintf("random_%d", seed)] = func() int { return 1 + rng.IntN(40) }
			}
			for name, next := range splits {
				require.Equal(t, whole, feed(tc.text, next), "split=%s", name)
			}
		})
	}
}

func TestStreamingConfirmsAtTheFirstBoundaryAndStops(t *testing.T) {
	t.Parallel()
	var d Detector
	loop := strings.Repeat("duct", 1024+512)
	d.Write(loop)
	f := d.Finding()
	require.Equal(t, Confirmed, f.Status)
	require.Equal(t, ConfirmedChars, f.DetectedAtChar, "confirmed at the 4096-character boundary")
	d.Write(randomText(1, 5000))
	require.Equal(t, f, d.Close(), "a confirmed loop stays confirmed")

	// A suspected loop that the text leaves stays reported as suspected.
	var s Detector
	s.Write(strings.Repeat("duct", 800))
	require.Equal(t, Suspected, s.Status())
	s.Write(randomText(3, 3000))
	require.Equal(t, Suspected, s.Close().Status)
}

func TestWindowBoundsTheTail(t *testing.T) {
	t.Parallel()
	var d Detector
	// A long clean text keeps the detector's memory bounded, and a loop
	// longer than the window is measured only as far as the window reaches.
	d.Write(randomText(9, 3*WindowChars))
	require.Equal(t, Clean, d.Status())
	require.LessOrEqual(t, len(d.buf), 2*WindowChars)
	f := Check(randomText(9, 1000) + strings.Repeat("xy", WindowChars))
	require.Equal(t, WindowChars, f.RepeatedChars, "a check sees at most the window")
}

func TestPairStopsOnTheLoopingChannel(t *testing.T) {
	t.Parallel()
	var p Pair
	require.NoError(t, p.Write(randomText(5, 3000), strings.Repeat("hmm ", 100)))
	var err error
	for range 2000 {
		if err = p.Write("", "hmm "); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, ErrLoop)
	var le *Error
	require.True(t, errors.As(err, &le))
	require.Equal(t, "reasoning", le.Channel)
	require.Equal(t, 4, le.Finding.PeriodChars)
	require.Contains(t, err.Error(), "loop detected in reasoning: a 4-character cycle")
	c, r := p.Close()
	require.Equal(t, Clean, c.Status, "content is checked apart from reasoning")
	require.Equal(t, Confirmed, r.Status)
}

func BenchmarkDetectorClean(b *testing.B) {
	text := randomText(11, 16384) // ~4096 tokens of output
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		var d Detector
		for i := 0; i < len(text); i += 4 {
			d.Write(text[i:min(i+4, len(text))])
		}
		d.Close()
	}
}

// A 256-token request of a looping model is about 1,000 characters: one
// request alone is only Suspected (the peer's thresholds need 4,096
// characters), so a cell of such requests is confirmed across them.
func TestRepeatsConfirmAcrossRequestsOfOnePrompt(t *testing.T) {
	t.Parallel()
	short := strings.Repeat("duct", 256) // max_tokens 256, 4 characters a token
	var one Pair
	require.NoError(t, one.Write(short, ""))
	content, _ := one.Close()
	require.Equal(t, Suspected, content.Status, "one request: suspected, never confirmed")

	var r Repeats
	for n := 1; n <= 4; n++ {
		var p Pair
		require.NoError(t, p.Write("The answer begins. "+short, ""))
		err := r.Close(&p)
		if n < 4 {
			require.NoError(t, err, "request %d: %d characters so far", n, 1024*n)
			continue
		}
		var le *Error
		require.ErrorAs(t, err, &le)
		require.Equal(t, 4, le.Requests)
		require.Equal(t, "content", le.Channel)
		require.GreaterOrEqual(t, le.Chars, ConfirmedChars)
		require.Contains(t, err.Error(), "the same 4-character cycle ends 4 requests of one prompt")
	}

	// Positive controls: identical outputs that do not loop within
	// themselves, however many, and loops of different cycles or
	// channels never add up.
	var same Repeats
	for range 50 {
		var p Pair
		require.NoError(t, p.Write(randomText(3, 1100), ""))
		require.NoError(t, same.Close(&p))
	}
	var mixed Repeats
	for i, s := range []string{"duct", "tape", "gear", "bolt"} {
		var p Pair
		text := strings.Repeat(s, 256)
		if i%2 == 1 {
			require.NoError(t, p.Write("", text))
		} else {
			require.NoError(t, p.Write(text, ""))
		}
		require.NoError(t, mixed.Close(&p))
	}
	// A confirmed finding confirms at once.
	var long Repeats
	var p Pair
	require.Error(t, p.Write(strings.Repeat("duct", 1024), ""))
	require.Error(t, long.Close(&p))
}
