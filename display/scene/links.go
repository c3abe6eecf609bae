package scene

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/spec"
)

// membership is an open inside tuple: the child is in parent.
type membership struct {
	parent algebra.Value
	t      *Tuple
}

// ghost is where a child was when its last membership ended.
type ghost struct {
	parent algebra.Value
	slot   int
	ended  algebra.Time
}

// insideSet is an inside statement's part of the model: which child is in
// which parent now, and where children were (traces).
type insideSet struct {
	sc            *Scene
	l             *spec.Link
	child, parent *iconSet
	// member lists each child's open memberships, the latest last: the
	// child is drawn in the latest one's parent.
	member map[algebra.Value][]membership
	ghosts map[algebra.Value]*ghost
}

func (in *insideSet) begin(t *Tuple) {
	c := t.Vals[in.l.From]
	in.member[c] = append(in.member[c], membership{parent: t.Vals[in.l.To], t: t})
}

func (in *insideSet) end(t *Tuple) {
	c := t.Vals[in.l.From]
	ms := in.member[c]
	i := slices.IndexFunc(ms, func(m membership) bool { return m.t == t })
	if i < 0 {
		return
	}
	p := ms[i].parent
	ms = slices.Delete(ms, i, i+1)
	if len(ms) == 0 {
		delete(in.member, c)
	} else {
		in.member[c] = ms
	}
	slot := -1
	if pin := in.parent.byKey[p]; pin != nil {
		slot = slices.Index(pin.slots, childRef{in.child, c})
	}
	in.ghosts[c] = &ghost{parent: p, slot: slot, ended: t.To}
}

// An inside relation of events holds its child for the decay: as a trace.
func (in *insideSet) event(t *Tuple) {
	c := t.Vals[in.l.From]
	in.ghosts[c] = &ghost{parent: t.Vals[in.l.To], slot: -1, ended: t.From}
}

// parentOf is the key of the parent a child is drawn in, if any.
func (in *insideSet) parentOf(c algebra.Value) (algebra.Value, bool) {
	ms := in.member[c]
	if len(ms) == 0 {
		return algebra.Value{}, false
	}
	return ms[len(ms)-1].parent, true
}

// pairKey names an arrow by its two ends.
type pairKey struct{ from, to algebra.Value }

// arrowState is what the model knows of the tuples between two entities:
// how many are open, when the last ended or happened, and the latest
// (for the shade and colour).
type arrowState struct {
	open  int
	ended algebra.Time
	last  *Tuple
	event bool // the latest is an event
}

// arrowSet is an arrow (or connecting line) statement's part of the model.
// Tuples between the same two entities are drawn as one arrow: the
// picture is the same and the state stays bounded by the pairs.
type arrowSet struct {
	sc       *Scene
	l        *spec.Link
	from, to *iconSet
	pairs    map[pairKey]*arrowState
}

func (a *arrowSet) state(t *Tuple) *arrowState {
	k := pairKey{t.Vals[a.l.From], t.Vals[a.l.To]}
	st := a.pairs[k]
	if st == nil {
		st = &arrowState{}
		a.pairs[k] = st
	}
	return st
}

func (a *arrowSet) begin(t *Tuple) {
	st := a.state(t)
	st.open++
	st.last, st.event = t, false
}

func (a *arrowSet) end(t *Tuple) {
	st := a.state(t)
	if st.open > 0 {
		st.open--
	}
	st.ended = max(st.ended, t.To)
}

func (a *arrowSet) event(t *Tuple) {
	st := a.state(t)
	st.ended = max(st.ended, t.From)
	st.last, st.event = t, true
}

// sweep forgets arrows whose trace has faded.
func (a *arrowSet) sweep(now algebra.Time) {
	for k, st := range a.pairs {
		if st.open == 0 && now-st.ended >= a.sc.sp.Decay && now >= st.ended {
			delete(a.pairs, k)
		}
	}
}

// flashState is what makes one icon flash: open tuples, and the latest
// start (of an interval or an event).
type flashState struct {
	open  int
	start algebra.Time
}

// flashSet is a flash (or blink) statement's part of the model.
type flashSet struct {
	sc    *Scene
	f     *spec.Flash
	icons *iconSet
	state map[algebra.Value]*flashState
}

func (fs *flashSet) get(t *Tuple) *flashState {
	k := t.Vals[fs.f.Attr]
	st := fs.state[k]
	if st == nil {
		st = &flashState{start: algebra.Beginning}
		fs.state[k] = st
	}
	return st
}

func (fs *flashSet) begin(t *Tuple) {
	st := fs.get(t)
	st.open++
	st.start = max(st.start, t.From)
}

func (fs *flashSet) end(t *Tuple) {
	if st := fs.get(t); st.open > 0 {
		st.open--
	}
}

func (fs *flashSet) event(t *Tuple) {
	st := fs.get(t)
	st.start = max(st.start, t.From)
}

// on reports whether an icon flashes at now and whether it is lit: a flash
// alternates eight times over its duration, lit first.
func (fs *flashSet) on(k algebra.Value, now algebra.Time) (flashing, lit bool) {
	st := fs.state[k]
	if st == nil || st.start == algebra.Beginning {
		return false, false
	}
	age := max(0, now-st.start)
	if st.open == 0 && age >= fs.f.For {
		return false, false
	}
	phase := max(1, fs.f.For/8)
	return true, (age/phase)%2 == 0
}

// sweep forgets flashes that are over.
func (fs *flashSet) sweep(now algebra.Time) {
	for k, st := range fs.state {
		if st.open == 0 && now-st.start >= fs.f.For && now >= st.start {
			delete(fs.state, k)
		}
	}
}
