package rewrite

import (
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// The clock class (the paper's O6 and O7): sampling follows the Clock[n] a
// query asks for.
func clockRules() []Rule {
	return []Rule{
		{
			Name:  "clock-sampling",
			Class: ClockRules,
			Doc: `σT[c overlap v](… α_v(E1, E2) × Clock[n] c …) →
σT[c overlap v](… α_v(E1, E2 ∩ Clock[n]) × Clock[n] c …) for a sampled v
(the paper's O6). A tuple of v matters only if it overlaps a tick of
Clock[n], that is, if it is valid at one of those ticks; a sampled α
delivers each tuple valid at one of its sampling instants, with its valid
time. Sampling only at the ticks of Clock[n] therefore still delivers every
tuple that matters (the join drops the rest, as before).`,
			Sets:  Live,
			apply: on[*plan.Project](clockSampling),
		},
		{
			Name:  "clock-intersect",
			Class: ClockRules,
			Doc: `Clock[a] ∩ Clock[b] → Clock[lcm(a, b)] (the paper's O7): the ticks
common to both are the multiples of both periods.`,
			Sets:  Live,
			apply: on[*plan.SetOp](clockIntersect),
		},
	}
}

func clockSampling(_ *Context, pr *plan.Project) plan.Node {
	b, ok := decompose(pr)
	if !ok {
		return nil
	}
	for v := 0; v < b.k; v++ {
		a, ok := b.alpha(v)
		if !ok || !a.Sampled() || a.When == nil {
			continue
		}
		for c := 0; c < b.k; c++ {
			sc, ok := b.leaves[c].(*plan.Scan)
			if !ok || !sc.Rel.IsClock() {
				continue
			}
			for _, w := range b.whens {
				p, ok := w.(*expr.PCmp)
				if !ok || p.Op != expr.Overlap {
					continue
				}
				xk, x1 := isVarRef(p.X, c)
				yk, y1 := isVarRef(p.Y, v)
				if !x1 || !y1 {
					xk, x1 = isVarRef(p.Y, c)
					yk, y1 = isVarRef(p.X, v)
				}
				if !x1 || !y1 || xk != "var" || yk != "var" {
					continue
				}
				clk := &plan.ClockSrc{N: sc.Rel.ClockN}
				if samplesAt(a.When, clk.N) {
					continue
				}
				vv := v
				return mapLeaves(pr, func(l plan.Node) plan.Node {
					al, ok := l.(*plan.Alpha)
					if !ok || al.Var != vv {
						return l
					}
					cp := *al
					cp.When = &plan.SetOp{L: al.When, R: clk}
					return &cp
				})
			}
		}
	}
	return nil
}

// samplesAt reports whether a sampling argument already samples only at
// multiples of n (Clock[m] with n dividing m, or an intersection with one).
func samplesAt(when plan.Node, n int64) bool {
	switch w := when.(type) {
	case *plan.ClockSrc:
		return w.N%n == 0
	case *plan.SetOp:
		return !w.Union && (samplesAt(w.L, n) || samplesAt(w.R, n))
	}
	return false
}

func clockIntersect(_ *Context, s *plan.SetOp) plan.Node {
	if s.Union {
		return nil
	}
	a, aok := s.L.(*plan.ClockSrc)
	b, bok := s.R.(*plan.ClockSrc)
	if !aok || !bok {
		return nil
	}
	return &plan.ClockSrc{N: lcm(a.N, b.N)}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 { return a / gcd(a, b) * b }
