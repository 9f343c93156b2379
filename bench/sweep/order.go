package sweep

// Interleave is the order in which an A/B of count runs per side measures
// its sides (0 for A, 1 for B): with both live, A B, B A, A B, … so that
// slow drift of the machine or the server hits both alike; with one live
// side, count runs of it; with none, nothing.
func Interleave(count int, liveA, liveB bool) []int {
	var order []int
	switch {
	case liveA && liveB:
		for round := range count {
			if round%2 == 0 {
				order = append(order, 0, 1)
			} else {
				order = append(order, 1, 0)
			}
		}
	case liveA || liveB:
		side := 0
		if liveB {
			side = 1
		}
		for range count {
			order = append(order, side)
		}
	}
	return order
}
