package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// enumerate forms every binding of the new entry at input i with the stored
// entries of the other inputs.
func (j *Join) enumerate(i int, ent *entry, h algebra.Time) {
	plan := j.plans[i]
	for v := range j.bind {
		j.bind[v] = nil
		j.vals[v] = nil
	}
	j.bind[i] = ent
	j.vals[i] = ent.rec.Vals
	j.grpDone = false
	var rec func(s int)
	rec = func(s int) {
		if j.st.err != nil {
			return
		}
		if s == len(plan) {
			if j.semi {
				j.witness(h)
			} else {
				j.newCand(h, j.bind)
			}
			return
		}
		st := &plan[s]
		if s == 0 {
			if j.checks(st.checks) {
				rec(1)
			}
			return
		}
		in := j.in[st.v]
		var list []*entry
		var ix *index
		var key []algebra.Value // this step's own buffer: deeper steps have theirs
		if st.index >= 0 {
			ix = in.idx[st.index]
			key = st.probe[:0]
			for _, kf := range st.keys {
				v, err := kf(j.vals)
				if err != nil {
					j.st.fail(err)
					return
				}
				key = append(key, v)
			}
			st.probe = key
			list = ix.m.get(j.st.hash(key))
		} else {
			list = in.entries[in.entHead:]
		}
		for _, e := range list {
			// One tuple can bind with millions: the budget is checked
			// inside the loop, at a stride.
			if !j.st.poll() {
				break
			}
			if e.dead || ix != nil && !keyMatch(e.rec.Vals, ix.cols, key) {
				continue // purged, or only its hash collides
			}
			j.bind[st.v] = e
			j.vals[st.v] = e.rec.Vals
			if j.checks(st.checks) {
				rec(s + 1)
			}
			if j.grpDone {
				// The group of this binding is settled. When only
				// existential variables are bound from here on, it
				// stays the same group: no other witness is needed.
				if !st.exTail {
					j.grpDone = false
				} else {
					break
				}
			}
		}
		j.bind[st.v] = nil
		j.vals[st.v] = nil
	}
	rec(0)
}

func (j *Join) checks(fs []expr.Fn) bool { return j.st.holds(fs, j.vals) }
