// Package judgments holds typed questions about images (Noul, Choice, Score),
// builds their prompts and scoring requests as typevet does, turns candidate
// logprobs into answers, and talks to an OpenAI-compatible server.
package judgments

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Kind is the type of a question.
type Kind string

const (
	// Noul is a yes/no question; its value is P(true).
	Noul Kind = "noul"
	// Choice picks one label; its verdict is the argmax label.
	Choice Kind = "choice"
	// Score rates on levels 0..n-1; its value is the expected level.
	Score Kind = "score"
)

// MaxControls is how many single-character controls exist ("0".."9", "A".."Z").
const MaxControls = 36

// MaxChoices is typevet's execute limit on the number of labels of one question.
const MaxChoices = 24

// Option is one label of a question with its optional description.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Question is one typed question. Options are in decision order: for a Noul
// that is (false, true), for a Choice the criteria order, for a Score the
// levels 0..n-1. Use NewNoul, NewChoice and NewScore to build one.
type Question struct {
	ID           string   `json:"id"`
	Kind         Kind     `json:"kind"`
	Instructions string   `json:"instructions"`
	Options      []Option `json:"options"`
}

// NewNoul builds a yes/no question. The descriptions may be empty.
func NewNoul(id, instructions, trueDesc, falseDesc string) Question {
	return Question{ID: id, Kind: Noul, Instructions: instructions, Options: []Option{
		{Label: "false", Description: falseDesc},
		{Label: "true", Description: trueDesc},
	}}
}

// NewChoice builds a question whose answer is one of opts, in the given order.
func NewChoice(id, instructions string, opts ...Option) Question {
	return Question{ID: id, Kind: Choice, Instructions: instructions, Options: append([]Option(nil), opts...)}
}

// NewScore builds a rubric question with one level per rubric line (0..n-1).
func NewScore(id, instructions string, rubric ...string) Question {
	q := Question{ID: id, Kind: Score, Instructions: instructions}
	for i, r := range rubric {
		q.Options = append(q.Options, Option{Label: strconv.Itoa(i), Description: r})
	}
	return q
}

// Labels returns the labels in decision order.
func (q Question) Labels() []string {
	out := make([]string, len(q.Options))
	for i, o := range q.Options {
		out[i] = o.Label
	}
	return out
}

// Control returns the control string bound to decision index i.
func Control(i int) string {
	switch {
	case i < 0 || i >= MaxControls:
		return ""
	case i < 10:
		return string(rune('0' + i))
	default:
		return string(rune('A' + i - 10))
	}
}

// Controls returns the control strings of q in decision order.
func (q Question) Controls() []string {
	out := make([]string, len(q.Options))
	for i := range q.Options {
		out[i] = Control(i)
	}
	return out
}

// Validate reports a question that cannot be asked.
func (q Question) Validate() error {
	if q.ID == "" {
		return fmt.Errorf("question: empty id")
	}
	n := len(q.Options)
	switch q.Kind {
	case Noul:
		if n != 2 || q.Options[0].Label != "false" || q.Options[1].Label != "true" {
			return fmt.Errorf("question %s: a noul has labels (false, true)", q.ID)
		}
	case Choice, Score:
	default:
		return fmt.Errorf("question %s: unknown kind %q", q.ID, q.Kind)
	}
	if n < 2 || n > MaxChoices {
		return fmt.Errorf("question %s: %d options, want 2..%d", q.ID, n, MaxChoices)
	}
	seen := map[string]bool{}
	for _, o := range q.Options {
		if o.Label == "" || seen[o.Label] {
			return fmt.Errorf("question %s: empty or duplicate label %q", q.ID, o.Label)
		}
		seen[o.Label] = true
	}
	return nil
}

// FieldBlock renders the question as typevet's default option block:
// "<id>: <instructions>", a blank line, "Options:", one line per option, a
// blank line and the answer rule.
func (q Question) FieldBlock() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n\nOptions:\n", q.ID, q.Instructions)
	prefix := q.optionPrefix()
	for i, o := range q.Options {
		fmt.Fprintf(&b, "%s%s → %s", prefix, Control(i), o.Label)
		if o.Description != "" {
			fmt.Fprintf(&b, ": %s", o.Description)
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	if len(q.Options) <= 10 {
		b.WriteString("Answer with exactly one control string (the digit shown), not the original label text.")
	} else {
		b.WriteString("Answer with exactly one control string (the digit or letter shown), not the original label text.")
	}
	return b.String()
}

// optionPrefix is "Control " for Noul and Score; a native Choice has none
// unless a label could be mistaken for a control (all digits or equal to one).
func (q Question) optionPrefix() string {
	if q.Kind != Choice {
		return "Control "
	}
	controls := map[string]bool{}
	for _, c := range q.Controls() {
		controls[c] = true
	}
	for _, o := range q.Options {
		if controls[o.Label] || isDigits(o.Label) {
			return "Control "
		}
	}
	return ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Digest is typevet's prompt digest: sha256 of the question definition
// {name, label_order, instructions, criteria} as Python's
// json.dumps(sort_keys=True) writes it. Matching typevet byte for byte makes
// receipts of both systems comparable on identity.
func (q Question) Digest() string {
	labels := q.Labels()
	if q.Kind == Noul {
		// typevet digests the Noul as written (criteria true, false).
		labels = []string{"true", "false"}
	}
	criteria := map[string]string{}
	for _, o := range q.Options {
		if o.Description != "" {
			criteria[o.Label] = o.Description
		}
	}
	var b strings.Builder
	b.WriteString(`{"criteria": {`)
	keys := make([]string, 0, len(criteria))
	for k := range criteria {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyQuote(k) + ": " + pyQuote(criteria[k]))
	}
	b.WriteString(`}, "instructions": ` + pyQuote(q.Instructions) + `, "label_order": [`)
	for i, l := range labels {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyQuote(l))
	}
	b.WriteString(`], "name": ` + pyQuote(q.ID) + `}`)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// pyQuote quotes s as Python's json.dumps does with ensure_ascii=True.
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r >= 0x7f && r < 0x10000):
			if r == 0x7f {
				b.WriteRune(r)
				continue
			}
			fmt.Fprintf(&b, `\u%04x`, r)
		case r >= 0x10000:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
