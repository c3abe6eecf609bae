package scene

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
)

// Scene is the model of a display: the stores of the displayed relations
// and, per display statement, the icons, relationships and flashes its
// tuples make. It is not safe for concurrent use: one goroutine feeds it
// and draws it (see Inbox for handing deltas over from others).
type Scene struct {
	sp   *spec.Spec
	rels map[string]*Relation

	icons   []*iconSet
	insides []*insideSet
	arrows  []*arrowSet
	flashes []*flashSet

	// layout is the current placement; stale when the model changed in a
	// way that moves icons, or the size changed.
	lay     layout
	stale   bool
	layouts int // relayouts so far

	// top is the first row of the layout shown (the view scrolls when
	// the icons are taller than the area); Draw keeps it within them.
	// above and below count the icons the last Draw left wholly or
	// partly outside the view.
	top, above, below int

	// placed is what the last Draw put where (tests check overlaps).
	placed []Placed

	// tf is how labels print time-typed values: algebra.TimeAuto, local
	// with SetLocal (--tz local).
	tf algebra.TimeFormat
	// crowded are the arrow statements the last Draw found no free lane
	// for some arrow of (drawn in their CrowdedColour).
	crowded []int
	// lanes is the arrows' routing grid, kept between frames for reuse.
	lanes grid

	// Observed is how the data drawn was observed: its gaps and sampled
	// relations (the status line and the timeline show them).
	Observed *Observation
}

// New makes an empty scene for a spec.
func New(sp *spec.Spec) *Scene {
	s := &Scene{rels: map[string]*Relation{}, Observed: newObservation(), tf: algebra.TimeAuto}
	s.SetSpec(sp, algebra.Beginning)
	return s
}

// SetLocal makes labels print time-typed values that are wall-clock
// times in the local time zone (--tz local), not UTC; call it before the
// first delta (labels are made as tuples arrive).
func (s *Scene) SetLocal(local bool) {
	s.tf = algebra.TimeAuto
	if local {
		s.tf |= algebra.TimeLocal
	}
}

// TimeFormat is how the scene's labels print times (SetLocal).
func (s *Scene) TimeFormat() algebra.TimeFormat { return s.tf }

// Layouts is the number of times the layout has been computed: only when
// icons must move (tests check that other changes do not).
func (s *Scene) Layouts() int { return s.layouts }

// Spec is the scene's spec.
func (s *Scene) Spec() *spec.Spec { return s.sp }

// Relation returns the store a relation's deltas go to, making it if
// need be. Stores live as long as the scene, across spec changes.
func (s *Scene) Relation(r *algebra.Relation) *Relation {
	if st := s.rels[r.Name]; st != nil {
		return st
	}
	st := newRelation(r)
	s.rels[r.Name] = st
	return st
}

// Stored returns the scene's store for the relation, or nil when it has
// none (the run does not feed that relation).
func (s *Scene) Stored(name string) *Relation { return s.rels[name] }

// SetSpec replaces the spec (the display may change while running): the
// views are rebuilt from the stored tuples — those open, and those closed
// recently enough (now minus the decay) to leave a trace.
func (s *Scene) SetSpec(sp *spec.Spec, now algebra.Time) {
	s.sp = sp
	for _, r := range s.rels {
		r.views = nil
	}
	s.icons, s.insides, s.arrows, s.flashes = nil, nil, nil, nil
	for i, ic := range sp.Icons {
		set := &iconSet{sc: s, ic: ic, idx: i, byKey: map[algebra.Value]*Instance{}}
		s.icons = append(s.icons, set)
		s.attach(ic.Rel, set)
	}
	for _, l := range sp.Links {
		from, to := s.icons[l.FromIcon], s.icons[l.ToIcon]
		if l.Kind == spec.Inside {
			in := &insideSet{sc: s, l: l, child: from, parent: to,
				member: map[algebra.Value][]membership{}, ghosts: map[algebra.Value]*ghost{}}
			to.container = true
			to.capacity = max(to.capacity, 1)
			to.childSets = append(to.childSets, from)
			s.insides = append(s.insides, in)
			s.attach(l.Rel, in)
			continue
		}
		a := &arrowSet{sc: s, l: l, from: from, to: to, pairs: map[pairKey]*arrowState{}}
		s.arrows = append(s.arrows, a)
		s.attach(l.Rel, a)
	}
	for _, f := range sp.Flashes {
		fs := &flashSet{sc: s, f: f, icons: s.icons[f.Icon], state: map[algebra.Value]*flashState{}}
		s.flashes = append(s.flashes, fs)
		s.attach(f.Rel, fs)
	}
	// Replay what is stored into the new views.
	for _, r := range s.rels {
		if len(r.views) == 0 {
			continue
		}
		var recent []*Tuple
		r.Closed(func(t *Tuple) bool {
			if now != algebra.Beginning && t.To < now-sp.Decay {
				return false
			}
			recent = append(recent, t)
			return true
		})
		for i := len(recent) - 1; i >= 0; i-- {
			t := recent[i]
			for _, v := range r.views {
				if t.Event {
					v.event(t)
				} else {
					v.begin(t)
					v.end(t)
				}
			}
		}
		r.Open(func(t *Tuple) {
			for _, v := range r.views {
				v.begin(t)
			}
		})
	}
	s.stale = true
}

// attach makes a view receive a relation's deltas.
func (s *Scene) attach(r *algebra.Relation, v view) {
	st := s.Relation(r)
	st.views = append(st.views, v)
}

// fade is how much of a past state remains at now: 1 when it ended just
// now, falling to 0 at the decay, in quarters (so that frames differ only
// when the picture does). ok is false when nothing remains.
func (s *Scene) fade(ended, now algebra.Time) (level float64, ok bool) {
	age := now - ended
	if age < 0 {
		age = 0
	}
	d := s.sp.Decay
	if age >= d {
		return 0, false
	}
	rem := float64(d-age) / float64(d)
	q := float64(int(rem*4+0.999999)) / 4
	return q, true
}

// TraceStyle is the style of a past state (a trace copy of an icon or
// arrow) that remains at level, 1 just ended to 0 gone.
func TraceStyle(level float64) draw.Style {
	return draw.Style{Fg: draw.Gray(0.2 + 0.5*level), Dim: true}
}
