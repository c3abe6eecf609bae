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
	var rec func(s int)
	rec = func(s int) {
		if j.st.err != nil {
			return
		}
		if s == len(plan) {
			j.newCand(h, j.bind)
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
		if st.index >= 0 {
			if len(st.keys) == 1 {
				v, err := st.keys[0](j.vals)
				if err != nil {
					j.st.fail(err)
					return
				}
				if stringKeyed(v.K) {
					list = in.idx[st.index].m[v.S]
				} else {
					j.keybuf = algebra.AppendKey(j.keybuf[:0], v)
					list = in.idx[st.index].m[string(j.keybuf)]
				}
			} else {
				j.keybuf = j.keybuf[:0]
				for _, kf := range st.keys {
					v, err := kf(j.vals)
					if err != nil {
						j.st.fail(err)
						return
					}
					j.keybuf = algebra.AppendKey(j.keybuf, v)
				}
				list = in.idx[st.index].m[string(j.keybuf)]
			}
		} else {
			list = in.entries[in.entHead:]
		}
		for _, e := range list {
			// One tuple can bind with millions: the budget is checked
			// inside the loop, at a stride.
			if !j.st.poll() {
				break
			}
			if e.dead {
				continue
			}
			j.bind[st.v] = e
			j.vals[st.v] = e.rec.Vals
			if j.checks(st.checks) {
				rec(s + 1)
			}
		}
		j.bind[st.v] = nil
		j.vals[st.v] = nil
	}
	rec(0)
}

func (j *Join) checks(fs []expr.Fn) bool {
	for _, f := range fs {
		ok, err := f(j.vals)
		if err != nil {
			j.st.fail(err)
			return false
		}
		if !ok.B() {
			return false
		}
	}
	return true
}
