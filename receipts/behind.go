package receipts

import "strings"

// TwinBehind leads the warning a receipt carries when the twin it measured
// fell behind its own model in the window (bench/audit.DeliveryWarning
// writes it): the figures are what the client saw, slower than the model.
// Readers that compare receipts find it by this lead.
const TwinBehind = "the twin fell behind its model"

// FellBehind is the warnings among ws that say the twin fell behind.
func FellBehind(ws []string) []string {
	var out []string
	for _, w := range ws {
		if strings.HasPrefix(w, TwinBehind) {
			out = append(out, w)
		}
	}
	return out
}
