package testkit

import "math/rand/v2"

// RandConds returns up to max−1 random conjuncts for the random queries
// of the differential tests: each an atom from atom, a quarter of them
// negated ("not (…)") and a quarter or-ed with another atom.
func RandConds(r *rand.Rand, max int, atom func() string) []string {
	var conds []string
	for range r.IntN(max) {
		c := atom()
		switch r.IntN(4) {
		case 0:
			c = "not (" + c + ")"
		case 1:
			c = "(" + c + " or " + atom() + ")"
		}
		conds = append(conds, c)
	}
	return conds
}
