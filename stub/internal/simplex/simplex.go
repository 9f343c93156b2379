// Package simplex is the Nelder–Mead search the twin's constants are fitted
// with: stub/fit's fits and package stub's leave-one-out test share it.
package simplex

import "sort"

// NelderMead minimises f from x0 with restarts (each from the last
// best, its simplex 0.25 wide in each coordinate), in the space it is
// given.
func NelderMead(f func([]float64) float64, x0 []float64, restarts, iters int) []float64 {
	n := len(x0)
	for range restarts {
		simplex := make([][]float64, n+1)
		vals := make([]float64, n+1)
		for i := range simplex {
			simplex[i] = append([]float64{}, x0...)
			if i > 0 {
				simplex[i][i-1] += 0.25
			}
			vals[i] = f(simplex[i])
		}
		for range iters {
			idx := make([]int, n+1)
			for i := range idx {
				idx[i] = i
			}
			sort.Slice(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
			s2, v2 := make([][]float64, n+1), make([]float64, n+1)
			for i, k := range idx {
				s2[i], v2[i] = simplex[k], vals[k]
			}
			simplex, vals = s2, v2
			cen := make([]float64, n)
			for i := range n {
				for j := range cen {
					cen[j] += simplex[i][j] / float64(n)
				}
			}
			at := func(a float64) []float64 {
				out := make([]float64, n)
				for j := range out {
					out[j] = cen[j] + a*(simplex[n][j]-cen[j])
				}
				return out
			}
			xr := at(-1)
			fr := f(xr)
			switch {
			case fr < vals[0]:
				// f is evaluated once a point: a deterministic f gives the
				// same search as evaluating it again.
				xe := at(-2)
				if fe := f(xe); fe < fr {
					simplex[n], vals[n] = xe, fe
				} else {
					simplex[n], vals[n] = xr, fr
				}
			case fr < vals[n-1]:
				simplex[n], vals[n] = xr, fr
			default:
				xc := at(0.5)
				if fc := f(xc); fc < vals[n] {
					simplex[n], vals[n] = xc, fc
				} else {
					for i := 1; i <= n; i++ {
						for j := range simplex[i] {
							simplex[i][j] = simplex[0][j] + 0.5*(simplex[i][j]-simplex[0][j])
						}
						vals[i] = f(simplex[i])
					}
				}
			}
		}
		best := 0
		for i := range vals {
			if vals[i] < vals[best] {
				best = i
			}
		}
		x0 = simplex[best]
	}
	return x0
}
