package plan

import (
	"github.com/tqmon/tqmon/algebra"
)

// WindowLabel prints a scan window, e.g. "@[0:00:07, 0:00:09]"; an empty
// one (From after To) as "@∅".
func WindowLabel(w algebra.Window) string {
	if w.From > w.To {
		return "@∅"
	}
	return "@[" + algebra.FormatTime(w.From, algebra.TimeAuto) + ", " + algebra.FormatTime(w.To, algebra.TimeAuto) + "]"
}

// RelRead is how plans read one stored relation: through Window, or whole
// (Window nil).
type RelRead struct {
	Rel    *algebra.Relation
	Window *algebra.Window
}

// Reads is what a sequence of plans reads from storage.
type Reads struct {
	// Rels are the primitive relations scanned, in order of first scan.
	// A relation scanned through several windows is read through their
	// hull; one scanned whole somewhere is read whole.
	Rels []RelRead
	// Clock is the hull of the windows of the Clock[n] scans, nil when
	// some Clock scan has none (or there is no Clock scan).
	Clock *algebra.Window
}

// ReadsOf collects what the plans' scans read: primitive relations (not
// derived ones, which the plans compute) and Clock ticks.
func ReadsOf(plans []Node) Reads {
	var r Reads
	idx := map[*algebra.Relation]int{}
	clockAll, clockSeen := false, false
	for _, p := range plans {
		Walk(p, func(n Node) {
			s, ok := n.(*Scan)
			if !ok || s.From != nil || s.Rel.Derived {
				return
			}
			if s.Rel.IsClock() {
				if s.Window == nil {
					clockAll = true
				} else if !clockSeen {
					w := *s.Window
					r.Clock = &w
				} else if r.Clock != nil {
					w := Hull(*r.Clock, *s.Window)
					r.Clock = &w
				}
				clockSeen = true
				return
			}
			i, seen := idx[s.Rel]
			if !seen {
				idx[s.Rel] = len(r.Rels)
				rr := RelRead{Rel: s.Rel}
				if s.Window != nil {
					w := *s.Window
					rr.Window = &w
				}
				r.Rels = append(r.Rels, rr)
				return
			}
			rr := &r.Rels[i]
			switch {
			case rr.Window == nil:
			case s.Window == nil:
				rr.Window = nil
			default:
				w := Hull(*rr.Window, *s.Window)
				rr.Window = &w
			}
		})
	}
	if clockAll {
		r.Clock = nil
	}
	return r
}

// Hull is the least window covering a and b; an empty window (From after
// To) covers nothing.
func Hull(a, b algebra.Window) algebra.Window {
	switch {
	case a.From > a.To:
		return b
	case b.From > b.To:
		return a
	}
	return algebra.Window{From: min(a.From, b.From), To: max(a.To, b.To)}
}

// Intersect is the window both a and b cover (empty when they are
// disjoint).
func Intersect(a, b algebra.Window) algebra.Window {
	return algebra.Window{From: max(a.From, b.From), To: min(a.To, b.To)}
}
