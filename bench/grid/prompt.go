package grid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/judgments"
)

// padding is the document a long prompt repeats until it is long enough:
// plain prose (no numbers or code, which tokenize unevenly), in our own
// words, cycled sentence by sentence.
var padding = []string{
	"The harbour authority kept a ledger of every ship that entered the bay, noting its cargo, its crew and the weather it had met at sea.",
	"A lighthouse keeper trims the wick at dusk, polishes the great lens at dawn and writes the state of the sea into the log between the two.",
	"Bridges of stone carry their load by compression alone, each wedge pressing on its neighbours until the arch stands by its own weight.",
	"In the valley the river was slow and brown, and the mill wheels turned only in spring, when the snow on the hills ran down to the sea.",
	"The cartographers of the old guild drew coastlines from the reports of sailors, correcting each chart whenever a captain came home with news.",
	"A well-kept garden is planned a season ahead: the beds are turned in autumn, the seeds chosen in winter and the paths laid before the rain.",
	"The clockmaker explained that a pendulum keeps time because its swing takes the same while whether it travels far or near.",
	"Travellers crossing the desert rested through the heat of the day and walked under the stars, guided by the wells their parents had dug.",
	"The library moved its oldest books to a cool, dry cellar, where the paper would not yellow and the bindings would not crack.",
	"On the farm the orchard came first, then the barley, and last of all the slow work of mending fences before the cattle were turned out.",
	"Shipwrights chose oak for the keel and pine for the masts, and they let the timber season for years before a single plank was cut.",
	"The village school had one room, one stove and one teacher, who taught reading in the morning and the names of the stars at night.",
}

// question ends every prompt: a task that keeps a model writing.
const question = "Write an extremely detailed history of the places and crafts this document describes, chapter by chapter. Do not summarize."

// prompt builds a message of about chars characters of document after the
// tag; the tag is the first thing the server tokenizes.
func prompt(tag string, chars int) string {
	var b strings.Builder
	b.Grow(chars + len(tag) + len(question) + 64)
	b.WriteString(tag)
	b.WriteString(" Below is a reference document.\n--- BEGIN DOCUMENT ---\n")
	n := 0
	for i := 0; n < chars; i++ {
		s := padding[i%len(padding)] + " "
		if n+len(s) > chars {
			s = s[:chars-n]
		}
		b.WriteString(s)
		n += len(s)
	}
	b.WriteString("\n--- END DOCUMENT ---\n")
	b.WriteString(question)
	return b.String()
}

// counter tells how many prompt tokens a text is on the server.
type counter func(ctx context.Context, text string) (int, error)

// fit finds how many document characters make a prompt of target tokens,
// within tol: proportional steps from chars, at most tries counts. It
// returns the characters and the count they gave.
func fit(ctx context.Context, count counter, tag string, chars, target, tol, tries int) (int, int, error) {
	chars = max(chars, 1)
	got := 0
	for range tries {
		var err error
		got, err = count(ctx, prompt(tag, chars))
		if err != nil {
			return 0, 0, err
		}
		if abs(got-target) <= tol {
			return chars, got, nil
		}
		if got <= 0 {
			return 0, 0, fmt.Errorf("the server counts %d tokens for %d characters", got, chars)
		}
		next := int(float64(chars) * float64(target) / float64(got))
		if next == chars {
			next += sign(target - got)
		}
		chars = max(next, 1)
	}
	return chars, got, fmt.Errorf("no prompt within %d tokens of %d after %d tries (last: %d tokens)", tol, target, tries, got)
}

// calibration is how the server counts a prompt: the tokens of a prompt
// with no document (tag, frame, question, chat template) and the
// document's characters per token, measured on one chunk.
type calibration struct {
	overhead int
	cpt      float64
}

// charsFor is the document length of a prompt of tokens: the padding is a
// cycle of plain sentences, so its count grows in proportion.
func (c calibration) charsFor(tokens int) int {
	return max(1, int(math.Round(float64(tokens-c.overhead)*c.cpt)))
}

type calKey struct {
	targeting string
	tokens    int
}

// promptChars is how many document characters make a prompt of tokens:
// remembered per context; else from the run's calibration, which costs
// two counts once (a bare prompt and one chunk of CalibrationTokens), so a
// 1M-token context is never counted by search. Exact targeting then
// checks the full prompt with /tokenize and corrects it (once, usually).
func (r *Runner) promptChars(ctx context.Context, o Options, tokens int) (int, error) {
	key := calKey{o.Targeting, tokens}
	if c, ok := r.chars[key]; ok {
		return c, nil
	}
	count := usageCounter(r.client, r.Model)
	if o.Targeting == TargetingExact {
		count = tokenizeCounter(r.hc, r.Endpoint.BaseURL, r.Model, r.auth)
	}
	cal, ok := r.cal[o.Targeting]
	if !ok {
		chunk := min(o.CalibrationTokens, tokens)
		tag := r.tag("cal", chunk, 0)
		bare, err := count(ctx, prompt(tag, 0))
		if err != nil {
			return 0, err
		}
		doc := chunk * 4
		got, err := count(ctx, prompt(tag, doc))
		if err != nil {
			return 0, err
		}
		if got <= bare {
			return 0, fmt.Errorf("the server counts %d tokens with %d characters of document and %d without", got, doc, bare)
		}
		cal = calibration{overhead: bare, cpt: float64(doc) / float64(got-bare)}
		r.cal[o.Targeting] = cal
	}
	chars := cal.charsFor(tokens)
	if o.Targeting == TargetingExact {
		var err error
		chars, _, err = fit(ctx, count, r.tag("cal", tokens, 0), chars, tokens, max(64, tokens/200), 4)
		if err != nil {
			return 0, err
		}
	}
	r.chars[key] = chars
	return chars, nil
}

func abs(x int) int { return max(x, -x) }

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// usageCounter counts with a streamed request of one output token: the
// server's usage.prompt_tokens.
func usageCounter(c *stream.Client, model string) counter {
	return func(ctx context.Context, text string) (int, error) {
		req := stream.Text(text, 1)
		req.Model = model
		res := c.Do(ctx, req, nil)
		if res.Err != nil {
			return 0, res.Err
		}
		if res.PromptTokens <= 0 {
			return 0, errors.New("the server sent no usage.prompt_tokens")
		}
		return res.PromptTokens, nil
	}
}

// tokenizeCounter counts with vLLM's POST /tokenize of the chat messages.
func tokenizeCounter(hc *http.Client, base, model string, auth func(*http.Request)) counter {
	return func(ctx context.Context, text string) (int, error) {
		body, err := json.Marshal(map[string]any{
			"model":                 model,
			"messages":              []map[string]string{{"role": "user", "content": text}},
			"add_generation_prompt": true,
		})
		if err != nil {
			return 0, err
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/tokenize", strings.NewReader(string(body)))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		auth(req)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, fmt.Errorf("POST /tokenize: %w", err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if resp.StatusCode != http.StatusOK {
			return 0, judgments.ParseStatusError("/tokenize", resp, data, judgments.SentKey(auth))
		}
		var out struct {
			Count *int `json:"count"`
		}
		if err := json.Unmarshal(data, &out); err != nil || out.Count == nil {
			return 0, fmt.Errorf("POST /tokenize: no count in the answer")
		}
		return *out.Count, nil
	}
}
