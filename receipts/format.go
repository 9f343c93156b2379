package receipts

import "fmt"

// OffFormat counts the answers whose sampled token was none of the
// question's candidates: left to itself (greedy decoding) the model would
// have answered something other than a control. The answers still stand
// (softmax over the candidates), but an upgrade that makes a model answer
// off-format more often is a regression a reader wants to see.
type OffFormat struct {
	// Answers is how many answers recorded their sampled token.
	Answers int `json:"answers"`
	// Total is how many of them were off-format.
	Total int `json:"total"`
	// ByQuestion is Total per question id (every question, 0 included).
	ByQuestion map[string]int `json:"by_question"`
}

// OffFormatOf counts off-format answers over the items that count in the
// figures (not discarded, not failed). It is nil when no answer recorded
// its sampled token (a typevet receipt, a server that sends none).
func OffFormatOf(items []Item) *OffFormat {
	o := &OffFormat{ByQuestion: map[string]int{}}
	for _, it := range items {
		if it.Discarded || it.Error != "" {
			continue
		}
		for _, a := range it.Answers {
			if a.Sampled == "" {
				continue
			}
			o.Answers++
			if _, ok := o.ByQuestion[a.Question]; !ok {
				o.ByQuestion[a.Question] = 0
			}
			if a.OffFormat {
				o.Total++
				o.ByQuestion[a.Question]++
			}
		}
	}
	if o.Answers == 0 {
		return nil
	}
	return o
}

// validateOffFormat checks the block against the items it counts.
func (r *Receipt) validateOffFormat(p *Problems) {
	got, want := r.OffFormat, OffFormatOf(r.Items)
	switch {
	case got == nil:
		return // not recorded (older receipts): nothing to check
	case want == nil:
		p.Add("off_format", "counts %d answers but no item records a sampled token", got.Answers)
		return
	}
	if got.Answers != want.Answers || got.Total != want.Total {
		p.Add("off_format", "%d of %d answers, but the items say %d of %d", got.Total, got.Answers, want.Total, want.Answers)
	}
	for _, q := range sortedKeys(want.ByQuestion) {
		if got.ByQuestion[q] != want.ByQuestion[q] {
			p.Add(joinKey("off_format.by_question", q), "%d, but the items say %d", got.ByQuestion[q], want.ByQuestion[q])
		}
	}
	for _, q := range sortedKeys(got.ByQuestion) {
		if _, ok := want.ByQuestion[q]; !ok {
			p.Add(joinKey("off_format.by_question", q), "no item answers question %q with a sampled token", q)
		}
	}
}

// String is "3 of 84 (verdict 2, amounts_match 1)", questions in id order,
// only those with off-format answers.
func (o *OffFormat) String() string {
	if o == nil {
		return "unknown"
	}
	s := fmt.Sprintf("%d of %d", o.Total, o.Answers)
	first := true
	for _, q := range sortedKeys(o.ByQuestion) {
		n := o.ByQuestion[q]
		if n == 0 {
			continue
		}
		if first {
			s += " ("
			first = false
		} else {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", q, n)
	}
	if !first {
		s += ")"
	}
	return s
}
