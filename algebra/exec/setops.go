package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// SetOp is ∩ or ∪ over two entity relations (streams of identifier tuples,
// each coalesced): an identifier is in L ∩ R while it is in both, in L ∪ R
// while it is in either. The output is coalesced. These operators combine
// the entity relations that α operators take as arguments.
type SetOp struct {
	union  bool
	out    stream.Receiver
	in     [2]*setInput
	merge  merge // of the inputs' buffers, L then R
	keys   map[string]*setGroup
	keybuf []byte

	cur      algebra.Time
	curSet   bool
	ending   []*setGroup
	begins   []stream.Elem
	done     algebra.Time
	started  bool
	lastAdv  algebra.Time
	advanced bool
}

type setInput struct {
	op *SetOp
	inbuf
}

type setGroup struct {
	key     string
	count   [2]int
	out     *stream.Rec
	pending bool
}

// NewSetOp builds L ∩ R (union false) or L ∪ R (union true).
func NewSetOp(union bool, out stream.Receiver) *SetOp {
	s := &SetOp{union: union, out: out, keys: map[string]*setGroup{}}
	for i := range s.in {
		s.in[i] = &setInput{op: s}
		s.merge.in = append(s.merge.in, &s.in[i].inbuf)
	}
	return s
}

// Input returns the receiver of side 0 (L) or 1 (R).
func (s *SetOp) Input(side int) stream.Receiver { return s.in[side] }

func (in *setInput) Push(e stream.Elem) { in.push(e) }

func (in *setInput) Advance(t algebra.Time) {
	if in.advance(t) {
		in.op.advance()
	}
}

func (s *SetOp) active(g *setGroup) bool {
	if s.union {
		return g.count[0] > 0 || g.count[1] > 0
	}
	return g.count[0] > 0 && g.count[1] > 0
}

func (s *SetOp) advance() {
	w, ok := s.merge.watermark()
	if !ok {
		return
	}
	if s.started && w <= s.done {
		return
	}
	s.started = true
	for {
		side, e, ok := s.merge.next()
		if !ok {
			break
		}
		s.process(side, e)
	}
	s.merge.reclaim()
	s.done = w
	if s.curSet && w >= s.cur {
		s.flush()
		s.curSet = false
	}
	if !s.advanced || w > s.lastAdv {
		s.lastAdv, s.advanced = w, true
		s.out.Advance(w)
	}
}

func (s *SetOp) process(side int, e stream.Elem) {
	if !s.curSet || e.T != s.cur {
		s.flush()
		s.cur, s.curSet = e.T, true
	}
	s.keybuf = algebra.AppendTupleKey(s.keybuf[:0], e.Rec.Vals)
	g := s.keys[string(s.keybuf)]
	if g == nil {
		if e.Kind == stream.End {
			return
		}
		g = &setGroup{key: string(s.keybuf)}
		s.keys[g.key] = g
	}
	was := s.active(g)
	switch e.Kind {
	case stream.Begin:
		g.count[side]++
	case stream.End:
		g.count[side]--
	case stream.Event:
		// Entity relations are interval relations; the network never feeds
		// an event stream to a set operator.
		return
	}
	s.settle(g, was, e)
}

func (s *SetOp) settle(g *setGroup, was bool, e stream.Elem) {
	now := s.active(g)
	switch {
	case !was && now:
		if g.pending {
			g.pending = false
			return
		}
		g.out = &stream.Rec{Vals: e.Rec.Vals, From: e.T}
		s.begins = append(s.begins, stream.Elem{Kind: stream.Begin, T: e.T, Rec: g.out})
	case was && !now:
		g.pending = true
		s.ending = append(s.ending, g)
	}
}

func (s *SetOp) flush() {
	for _, g := range s.ending {
		if g.pending {
			g.pending = false
			if g.out != nil {
				s.out.Push(stream.Elem{Kind: stream.End, T: s.cur, Rec: g.out})
				g.out = nil
			}
			if g.count[0] == 0 && g.count[1] == 0 {
				delete(s.keys, g.key)
			}
		}
	}
	s.ending = s.ending[:0]
	for i, e := range s.begins {
		s.out.Push(e)
		s.begins[i] = stream.Elem{}
	}
	s.begins = s.begins[:0]
}

// Held counts the identifiers tracked and buffered elements.
func (s *SetOp) Held() int {
	return len(s.keys) + len(s.begins) + s.merge.held()
}
